"""``--batch-size auto``: the memory arithmetic on simulated budgets, the model shapes it reads,
the CPU default, the run id and the resume rule.  No GPU needed: every budget is an argument."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from nlgbias.pipeline.audit import RunConfig
from nlgbias.cli import main
from nlgbias.models import resolve_model
from nlgbias.models.batching import (AUTO_CAP, CPU_BATCH, RESERVE, SAFETY, ModelShape, choose_batch_size,
                                     fit_batch_size, gguf_header, model_shape, resident_bytes, sequence_bytes,
                                     stored_batch_size, tidy)
from nlgbias.store import RunStore

GIB, MIB = 2 ** 30, 2 ** 20
SMOL = ModelShape(layers=30, hidden=576, heads=9, kv_heads=3, head_dim=64, intermediate=1536, vocab=49152,
                  params=134_515_008)  # SmolLM2-135M's published config


def two_significant_digits(n: int) -> bool:
    return n < 100 or int(str(n)[2:]) == 0


# -- the arithmetic ------------------------------------------------------------------------------


def test_fit_is_non_decreasing_in_memory_capped_tidy_and_never_below_one():
    per = sequence_bytes(SMOL, dtype="float32", prompt_tokens=14, new_tokens=40).total
    resident = resident_bytes(SMOL, dtype="float32")
    budgets = [0, GIB // 2, GIB, *range(GIB, 12 * GIB, 97 * MIB), 80 * GIB, 10 ** 15]
    sizes = [fit_batch_size(b, per, resident=resident) for b in budgets]
    assert all(a <= b for a, b in zip(sizes, sizes[1:]))
    assert sizes[0] == 1 and sizes[1] == 1  # not even the weights fit: 1, and loading reports the shortage
    assert sizes[-1] == AUTO_CAP and max(sizes) == AUTO_CAP
    assert len(set(sizes)) > 10 and all(two_significant_digits(s) for s in sizes)
    assert fit_batch_size(10 ** 15, per, cap=37) == 37


def test_fit_uses_the_safety_fraction_after_weights_and_reserve():
    per, resident = 4 * MIB, 3 * GIB
    free = 8 * GIB
    fits = int((free * SAFETY - resident - RESERVE) // per)  # (6.4 GiB - 3 GiB - 0.5 GiB) / 4 MiB = 742.4
    assert fit_batch_size(free, per, resident=resident) == tidy(fits) == 740
    assert fit_batch_size(free, per, resident=0) > fit_batch_size(free, per, resident=resident)
    with pytest.raises(ValueError, match="per_sequence"):
        fit_batch_size(free, 0)


def test_half_precision_halves_the_cache_and_the_weights_copy_costs_memory():
    f32 = sequence_bytes(SMOL, dtype="float32", prompt_tokens=10, new_tokens=40)
    bf16 = sequence_bytes(SMOL, dtype="bfloat16", prompt_tokens=10, new_tokens=40)
    assert f32.kv_cache == 2 * bf16.kv_cache
    assert f32.activations - bf16.activations == 10 * (3 * 1536 + 4 * 576) * 2  # attention scores stay float32
    assert bf16.total < f32.total
    # K and V, 30 layers, 3 heads of 64, 50 tokens, 4 bytes, twice (the cache grows by concatenation)
    assert f32.kv_cache == 2 * 30 * 3 * 64 * 50 * 4 * 2
    assert f32.logits == 49152 * 12  # logits, their float32 copy, the scaled copy
    assert resident_bytes(SMOL, dtype="bfloat16") == SMOL.params * 6  # float32 model + bfloat16 copy
    longer = sequence_bytes(SMOL, dtype="float32", prompt_tokens=10, new_tokens=400)
    assert longer.kv_cache == f32.kv_cache * 410 // 50
    free = 40 * GIB  # plenty: the smaller footprint fits more sequences
    assert (fit_batch_size(free, bf16.total, resident=resident_bytes(SMOL, dtype="bfloat16"), cap=10 ** 6)
            > fit_batch_size(free, f32.total, resident=resident_bytes(SMOL, dtype="float32"), cap=10 ** 6))


def test_tidy_keeps_two_significant_digits():
    assert [tidy(n) for n in (1, 99, 100, 101, 149, 999, 1000, 1049, 25_999)] == [1, 99, 100, 100, 140, 990, 1000,
                                                                                   1000, 25_000]


# -- model shapes, from the files ----------------------------------------------------------------


def test_gguf_header_matches_the_gguf_package_and_the_published_config():
    gguf = pytest.importorskip("gguf")
    path = resolve_model("smollm2-135m").source
    meta, params = gguf_header(path)
    reader = gguf.GGUFReader(path)
    assert params == sum(int(t.n_elements) for t in reader.tensors)
    for key in ("llama.block_count", "llama.embedding_length", "llama.attention.head_count",
                "llama.attention.head_count_kv", "llama.feed_forward_length", "llama.vocab_size"):
        assert meta[key] == reader.fields[key].contents(), key
    assert meta["tokenizer.ggml.tokens"].count == len(reader.fields["tokenizer.ggml.tokens"].data)
    assert ModelShape.from_gguf(path) == SMOL


def test_folder_config_shape_and_parameter_estimate(tiny, tiny_model_dir):
    shape = model_shape(resolve_model(str(tiny_model_dir)))
    config = tiny.model.config
    assert (shape.layers, shape.hidden, shape.heads, shape.kv_heads, shape.head_dim, shape.intermediate,
            shape.vocab) == (2, 64, 4, 2, 16, 128, config.vocab_size)
    real = sum(p.numel() for p in tiny.model.parameters())
    assert shape.params == pytest.approx(real, rel=0.01)  # the estimate misses only the norm weights


def test_an_unreadable_config_is_one_line_naming_the_model(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"hidden_size": 8}))
    ref = resolve_model(str(tmp_path))
    with pytest.raises(Exception, match=r"cannot size batch_size='auto' from its config .*num_hidden_layers"):
        model_shape(ref)


# -- choosing --------------------------------------------------------------------------------------


def choose(refs, *, device="cuda", free=None, dtype="float32", requests=6000, prompts=("The man was known for",)):
    return choose_batch_size("auto", refs=refs, device=device, dtype=dtype, prompts=list(prompts),
                             max_new_tokens=40, requests=requests, free_bytes=free)


def test_auto_on_a_cpu_is_120_and_a_number_stays_as_given(tiny_model_dir):
    ref = resolve_model(str(tiny_model_dir))
    assert choose([ref], device="cpu") == (CPU_BATCH, {"requested": "auto", "device": "cpu", "rule": "120 on cpu"})
    assert choose([ref], device="cpu", free=80 * GIB)[0] == CPU_BATCH  # a CPU is never sized from memory
    assert choose([resolve_model("fake")], free=80 * GIB)[0] == CPU_BATCH  # nothing local to size
    assert choose_batch_size(64, refs=[ref], device="cuda", dtype="float32", prompts=["x"], max_new_tokens=40,
                             requests=10) == (64, None)


def test_auto_on_a_simulated_gpu_sizes_the_default_model_from_free_memory():
    smol = resolve_model("smollm2-135m")
    sizes = {gib: choose([smol], free=gib * GIB)[0] for gib in (1, 2, 4, 8, 80)}
    assert sizes[1] < sizes[2] < sizes[4] <= sizes[8] <= sizes[80] == AUTO_CAP  # an H100 reaches the cap
    size, record = choose([smol], free=2 * GIB)
    per = sequence_bytes(SMOL, dtype="float32", prompt_tokens=record["prompt_tokens_estimate"], new_tokens=40).total
    assert size == fit_batch_size(2 * GIB, per, resident=resident_bytes(SMOL, dtype="float32"))
    assert record["free_gib"] == 2.0 and record["per_sequence_mib"] == round(per / MIB, 3)
    assert choose([smol], free=80 * GIB, requests=300)[0] == 300  # never more than the run asks for
    assert choose([smol], free=80 * GIB, requests=1)[0] == 1
    # two local models stay loaded together: both weights count, the larger footprint rules
    tiny_and_smol = choose([smol, smol], free=2 * GIB)[0]
    assert 1 <= tiny_and_smol < sizes[2]


def test_auto_on_a_simulated_gpu_counts_long_prompts():
    smol = resolve_model("smollm2-135m")
    short = choose([smol], free=2 * GIB)[0]
    long = choose([smol], free=2 * GIB, prompts=("The man was known for", "x" * 2000))[0]
    assert long < short


# -- the run id, the manifest, the resume rule -------------------------------------------------------


def config(model: str, batch_size):
    return RunConfig.create("sheng2019", models=[model], samples=1, batch_size=batch_size, scorers=["vader"],
                            max_new_tokens=2)


def test_the_batch_size_is_part_of_the_run_id_of_a_local_model_only(tiny_model_dir):
    tiny = str(tiny_model_dir)
    assert config(tiny, 120).run_id != config(tiny, 1000).run_id
    assert config(tiny, "auto").run_id == config(tiny, 120).run_id  # auto is 120 on this CPU
    assert config(tiny, 120).identity()["sampling"]["batch_size"] == 120
    assert config("fake", 120).run_id == config("fake", 1000).run_id  # the fake model ignores batches
    assert "batch_size" not in config("fake", 120).identity()["sampling"]


def test_an_automatic_gpu_size_keeps_the_size_its_settings_last_ran_with(tmp_path, tiny_model_dir):
    base = config(str(tiny_model_dir), 8)
    gpu = {"requested": "auto", "device": "cuda", "free_gib": 70.0}
    with RunStore(tmp_path / "store.sqlite") as store:
        fresh = replace(base, batch_size=1000, batch_auto=gpu)
        assert fresh.keep_stored_batch_size(store) == fresh  # nothing stored yet
        store.start_run(base.run_id, base.identity())
        other = replace(base, samples=2, batch_size=16)  # other settings: not a match
        store.start_run(other.run_id, other.identity())
        kept = fresh.keep_stored_batch_size(store)
        assert kept.batch_size == 8 and kept.run_id == base.run_id
        assert kept.batch_auto == {**gpu, "fitted_now": 1000, "kept_from_store": 8}
        cpu = replace(base, batch_size=120, batch_auto={"requested": "auto", "device": "cpu", "rule": "120 on cpu"})
        assert cpu.keep_stored_batch_size(store) == cpu  # on a CPU auto is always 120
        given = replace(base, batch_size=1000)
        assert given.keep_stored_batch_size(store) == given  # a number is never replaced


def test_stored_batch_size_is_the_latest_match():
    ident = {"suite": {"name": "s"}, "sampling": {"seed": 0, "batch_size": 1}}
    runs = [("a", {**ident, "sampling": {"seed": 0, "batch_size": 500}}),
            ("b", {**ident, "sampling": {"seed": 1, "batch_size": 64}}),
            ("c", {**ident, "sampling": {"seed": 0, "batch_size": 700}}),
            ("d", {"suite": {"name": "s"}, "statistics": {}})]
    assert stored_batch_size(ident, runs) == 700
    assert stored_batch_size(ident, runs[:2]) == 500
    assert stored_batch_size({**ident, "sampling": {"seed": 2}}, runs) is None


def test_cli_auto_on_a_cpu_records_120_in_the_manifest(tmp_path, tiny_model_dir):
    args = ["run", "sheng2019", "--model", str(tiny_model_dir), "--samples", "1", "--max-new-tokens", "2",
            "--scorer", "vader", "--n-boot", "200", "--quiet", "--device", "cpu"]
    for out, extra in (("auto", ["--batch-size", "auto"]), ("default", []), ("given", ["--batch-size", "60"])):
        main(args + extra + ["--out", str(tmp_path / out)])  # an error would exit with code 2
    manifests = {name: json.loads(Path(tmp_path / name / "manifest.json").read_text())
                 for name in ("auto", "default", "given")}
    auto = manifests["auto"]
    assert auto["sampling"]["batch_size"] == 120
    assert auto["sampling"]["batch_size_auto"] == {"requested": "auto", "device": "cpu", "rule": "120 on cpu"}
    assert manifests["default"]["run_id"] == auto["run_id"]
    given = manifests["given"]
    assert given["sampling"]["batch_size"] == 60 and "batch_size_auto" not in given["sampling"]
    assert given["run_id"] != auto["run_id"]


@pytest.mark.parametrize("value, message", [
    ("autox", "batch_size='autox': must be a whole number of at least 1, or auto"),
    (0, "batch_size=0: must be a whole number of at least 1, or auto"),
    (2.5, "batch_size=2.5: must be a whole number"),
    (10 ** 9, "batch_size=1000000000: must be at most 100,000"),
])
def test_python_callers_get_the_keyword_in_the_message(value, message):
    from nlgbias.errors import InputError

    with pytest.raises(InputError) as error:
        config("fake", value)
    assert str(error.value).startswith(message)


def test_a_run_with_an_automatic_gpu_size_resumes_with_the_stored_size(tmp_path, tiny_model_dir):
    from nlgbias.pipeline.audit import run_config

    base = replace(config(str(tiny_model_dir), 8), n_boot=200)
    first = run_config(base, out=tmp_path, quiet=True)
    assert first.generated == 60
    gpu = {"requested": "auto", "device": "cuda", "free_gib": 70.0}  # as RunConfig.create records a GPU choice
    again = run_config(replace(base, batch_size=1000, batch_auto=gpu), out=tmp_path, quiet=True)
    assert (again.run_id, again.generated) == (first.run_id, 0)
    assert again.manifest["sampling"]["batch_size"] == 8
    assert again.manifest["sampling"]["batch_size_auto"] == {**gpu, "fitted_now": 1000, "kept_from_store": 8}
