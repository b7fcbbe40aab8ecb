"""Shared fixtures: the embedded model (loaded once per session) and a tiny random model."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def smol():
    """The real embedded SmolLM2-135M backend, loaded once for the whole session."""
    from nlgbias.models import load_backend, resolve_model

    return load_backend(resolve_model("smollm2-135m"))


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    """A randomly initialised 2-layer Llama saved as a transformers folder, with SmolLM2's tokenizer.

    Real transformers code paths (loading a folder, KV cache, padding) at a fraction of the cost.
    """
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from nlgbias.models.embedded import EMBEDDED

    gguf = EMBEDDED["smollm2-135m"].path()
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id, tie_word_embeddings=True)
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    folder = tmp_path_factory.mktemp("tiny-llama")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny(tiny_model_dir):
    from nlgbias.models.hf import HFBackend

    return HFBackend(str(tiny_model_dir), model_id="tiny")


@pytest.fixture()
def isolated_cache(tmp_path, monkeypatch):
    """A private NLGBIAS_CACHE so tests never share converted models with the user's cache."""
    monkeypatch.setenv("NLGBIAS_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def pytest_configure():
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
