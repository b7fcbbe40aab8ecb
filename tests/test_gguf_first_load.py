"""The first load of a GGUF model says that it de-quantizes once; a load from the cache says nothing of it.

A real cold load of the embedded model takes about half a minute, so the run test uses a real
GGUF file built here: a randomly initialised 2-layer Llama with the first 1,000 tokens of
SmolLM2's tokenizer (copied from the embedded file), which transformers converts in seconds.
"""

from __future__ import annotations

import numpy as np
import pytest

import nlgbias
from nlgbias.models import resolve_model
from nlgbias.models.hf import first_load_note, gguf_cache

VOCAB = 1000


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory):
    """A real 580 KB GGUF file (llama architecture, F32 tensors, a cut-down SmolLM2 tokenizer)."""
    import gguf

    from nlgbias.models.embedded import EMBEDDED

    reader = gguf.GGUFReader(EMBEDDED["smollm2-135m"].path())
    path = tmp_path_factory.mktemp("gguf") / "tiny-llama.gguf"
    writer = gguf.GGUFWriter(path, "llama")
    tokens = reader.fields["tokenizer.ggml.tokens"].contents()[:VOCAB]
    kept = set(tokens)
    for field in reader.fields.values():
        if not field.name.startswith("tokenizer.ggml."):
            continue
        value = field.contents()
        if field.name == "tokenizer.ggml.merges":
            value = [m for m in value if set(m.split(" ")) <= kept and m.replace(" ", "") in kept]
        elif field.name in ("tokenizer.ggml.tokens", "tokenizer.ggml.token_type"):
            value = value[:VOCAB]
        sub_type = field.types[-1] if field.types[0] == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, value, field.types[0], sub_type=sub_type)
    hidden, ffn, heads, kv = 64, 128, 4, 2
    writer.add_context_length(128)
    writer.add_embedding_length(hidden)
    writer.add_block_count(2)
    writer.add_feed_forward_length(ffn)
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_dimension_count(hidden // heads)
    writer.add_rope_freq_base(10000.0)
    writer.add_vocab_size(VOCAB)
    rng = np.random.default_rng(0)
    shapes = {"attn_q": (hidden, hidden), "attn_k": (kv * hidden // heads, hidden),
              "attn_v": (kv * hidden // heads, hidden), "attn_output": (hidden, hidden),
              "ffn_gate": (ffn, hidden), "ffn_up": (ffn, hidden), "ffn_down": (hidden, ffn)}
    writer.add_tensor("token_embd.weight", (rng.standard_normal((VOCAB, hidden)) * 0.02).astype(np.float32))
    for block in range(2):
        for name in ("attn_norm", "ffn_norm"):
            writer.add_tensor(f"blk.{block}.{name}.weight", np.ones(hidden, np.float32))
        for name, shape in shapes.items():
            writer.add_tensor(f"blk.{block}.{name}.weight", (rng.standard_normal(shape) * 0.02).astype(np.float32))
    writer.add_tensor("output_norm.weight", np.ones(hidden, np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_a_run_notes_the_first_load_only(tiny_gguf, isolated_cache, tmp_path, capfd):
    ref = resolve_model(str(tiny_gguf))
    expected = (f"de-quantizing {tiny_gguf} once (about half a minute; the result is cached in "
                f"{isolated_cache / 'models'}); later loads take about 1 s")
    assert first_load_note(ref.source, ref.fingerprint, ref.model_id) == expected
    assert not gguf_cache(ref.fingerprint).exists()
    capfd.readouterr()
    for name in ("cold", "warm"):
        nlgbias.run("sheng2019", models=[str(tiny_gguf)], samples=1, max_new_tokens=2, scorers=["vader"],
                    n_boot=100, seed=0, out=tmp_path / name)
        err = capfd.readouterr().err
        if name == "cold":
            assert expected in err.splitlines() and f"loading {tiny_gguf} ..." not in err
            assert (gguf_cache(ref.fingerprint) / "config.json").is_file()
            assert first_load_note(ref.source, ref.fingerprint, ref.model_id) is None
        else:
            assert f"loading {tiny_gguf} ..." in err.splitlines() and "de-quantizing" not in err


def test_models_that_need_no_conversion_have_no_note(tiny_model_dir):
    ref = resolve_model(str(tiny_model_dir))
    assert ref.backend == "transformers" and first_load_note(ref.source, ref.fingerprint, ref.model_id) is None
