"""The Gumbel-max coupling of the pairing experiment (scripts/coupling.py): exact marginal distribution,
shared noise."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
import torch
from scipy.stats import chisquare

from nlgbias.models import GenerationRequest
from nlgbias.models.hf import pick_tokens
from nlgbias.sampling import SamplingParams

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
_spec = importlib.util.spec_from_file_location("coupling", SCRIPTS / "coupling.py")
coupling = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(coupling)
gumbel_pick, support, token_uniforms = coupling.gumbel_pick, coupling.support, coupling.token_uniforms

LOGITS = torch.tensor([1.5, -0.3, 2.2, 0.4, 2.0, -2.0, 0.9, 1.1, -1.0, 0.0, 3.0, 0.2])
DRAWS = 20000


def target(params: SamplingParams, logits: torch.Tensor = LOGITS) -> np.ndarray:
    """The distribution today's sampler draws from: softmax of logits / T over top-k, then top-p."""
    order = torch.argsort(logits, descending=True)
    k = params.top_k if 0 < params.top_k < len(logits) else len(logits)
    probs = torch.softmax(logits[order[:k]].double() / params.temperature, 0)
    if params.top_p < 1:
        probs = torch.where(probs.cumsum(0) - probs < params.top_p, probs, 0.0)
    out = np.zeros(len(logits))
    out[order[:k].numpy()] = (probs / probs.sum()).numpy()
    return out


def frequencies(tokens: torch.Tensor, vocab: int) -> np.ndarray:
    return np.bincount(tokens.numpy(), minlength=vocab)


def chi2_p(counts: np.ndarray, probs: np.ndarray) -> float:
    """Chi-square p-value of counts against probs; a token outside the support fails at once."""
    assert counts[probs == 0].sum() == 0
    kept = probs > 0
    return chisquare(counts[kept], probs[kept] * counts.sum()).pvalue


def gumbel_draws(params: SamplingParams, logits: torch.Tensor = LOGITS, n: int = DRAWS, step: int = 0) -> torch.Tensor:
    return gumbel_pick(logits.repeat(n, 1), list(range(n)), step, params)


def cdf_draws(params: SamplingParams, logits: torch.Tensor = LOGITS, n: int = DRAWS) -> torch.Tensor:
    uniforms = torch.tensor([np.random.default_rng(s).random(1)[0] for s in range(n)], dtype=torch.float64)
    return pick_tokens(logits.repeat(n, 1), uniforms, params)


CASES = [SamplingParams(temperature=0.7, top_k=5), SamplingParams(temperature=1.0, top_k=0),
         SamplingParams(temperature=0.7, top_k=0, top_p=0.8), SamplingParams(temperature=1.3, top_k=8, top_p=0.9)]


@pytest.mark.parametrize("params", CASES, ids=["top-k 5", "full", "top-p 0.8", "top-k 8 top-p 0.9"])
def test_gumbel_max_and_todays_sampler_draw_from_the_same_truncated_distribution(params):
    probs = target(params)
    gumbel = frequencies(gumbel_draws(params), len(LOGITS))
    today = frequencies(cdf_draws(params), len(LOGITS))
    assert chi2_p(gumbel, probs) > 1e-3
    assert chi2_p(today, probs) > 1e-3
    # The test has power: the same draws reject the untempered distribution.
    wrong = target(SamplingParams(temperature=1.0 if params.temperature != 1.0 else 0.7, top_k=params.top_k,
                                  top_p=params.top_p))
    if (wrong > 0).sum() == (probs > 0).sum():
        assert chisquare(gumbel[probs > 0], wrong[probs > 0] * DRAWS).pvalue < 1e-6


def test_gumbel_draws_at_a_later_step_are_fresh_and_exact():
    params = SamplingParams(temperature=0.7, top_k=5)
    first, later = gumbel_draws(params, step=0), gumbel_draws(params, step=7)
    assert chi2_p(frequencies(later, len(LOGITS)), target(params)) > 1e-3
    agree = (first == later).double().mean().item()
    expected = float((target(params) ** 2).sum())  # independent steps agree by chance only
    assert agree == pytest.approx(expected, abs=0.02)


def test_the_support_is_todays_top_k_then_top_p():
    values, indices, keep = support(LOGITS[None], SamplingParams(temperature=0.5, top_k=4, top_p=0.9))
    assert indices[0].tolist() == [10, 2, 4, 0]
    assert torch.allclose(values[0], LOGITS[[10, 2, 4, 0]] / 0.5)
    assert keep[0].tolist() == [True, True, True, False]  # 3.0, 2.2, 2.0 reach 90% at T = 0.5


def test_identical_distributions_pick_identical_tokens_under_shared_noise():
    params = SamplingParams(temperature=0.7, top_k=40)
    logits = torch.randn(3, 500, generator=torch.Generator().manual_seed(1))
    for seed in range(200):
        rows = logits[[seed % 3, seed % 3]]
        tokens = gumbel_pick(rows, [seed, seed], 0, params)
        assert tokens[0] == tokens[1]
    different = gumbel_pick(logits[[0] * 200], list(range(200)), 0, params)
    assert len(set(different.tolist())) > 10  # other seeds, other tokens


def test_close_distributions_share_their_token_far_more_often_than_under_the_inverse_cdf():
    """The point of the coupling: a small change in the logits rarely changes the Gumbel-max token,
    while under shared uniforms any swap in the ranking moves every draw between the swapped tokens."""
    params = SamplingParams(temperature=0.7, top_k=40)
    gen = torch.Generator().manual_seed(2)
    a = torch.randn(2000, 500, generator=gen) * 2
    b = a + 0.1 * torch.randn(2000, 500, generator=gen)
    seeds = list(range(2000))
    gumbel_agree = (gumbel_pick(a, seeds, 0, params) == gumbel_pick(b, seeds, 0, params)).double().mean().item()
    u = torch.tensor([np.random.default_rng(s).random(1)[0] for s in seeds], dtype=torch.float64)
    cdf_agree = (pick_tokens(a, u, params) == pick_tokens(b, u, params)).double().mean().item()
    assert gumbel_agree > 0.85
    assert gumbel_agree > cdf_agree + 0.2


def test_token_uniforms_are_fixed_by_seed_and_step():
    assert np.array_equal(token_uniforms(5, 3, 100), token_uniforms(5, 3, 100))
    assert not np.array_equal(token_uniforms(5, 3, 100), token_uniforms(5, 4, 100))
    assert np.array_equal(token_uniforms(5, 3, 100), token_uniforms(5, 3, 200)[:100])  # ids keep their noise


def test_greedy_ignores_the_noise():
    logits = LOGITS.repeat(50, 1)
    assert set(gumbel_pick(logits, list(range(50)), 0, SamplingParams(temperature=0.0)).tolist()) == {10}


def test_the_backend_samples_with_the_coupling_only_when_asked(tiny):
    params = SamplingParams(max_new_tokens=12)
    reqs = [GenerationRequest(p, params, 7) for p in ("The man worked as", "The woman worked as")] * 2
    today = tiny.generate(reqs)
    try:
        tiny.token_picker = gumbel_pick
        coupled = tiny.generate(reqs)
        alone = [tiny.generate([r])[0] for r in reqs]
    finally:
        tiny.token_picker = None
    assert tiny.generate(reqs) == today  # the default sampler is untouched
    assert coupled == alone  # a coupled sample does not depend on its batch
    assert coupled[:2] == coupled[2:]
    assert coupled != today


def experiment():
    """scripts/pairing_experiment.py loaded as `python scripts/pairing_experiment.py` runs it: its
    sibling ``coupling`` importable by name (the module above, for the time of the import)."""
    path = SCRIPTS / "pairing_experiment.py"
    spec = importlib.util.spec_from_file_location("pairing_experiment", path)
    module = importlib.util.module_from_spec(spec)
    with mock.patch.dict(sys.modules, {"coupling": coupling}):
        spec.loader.exec_module(module)
    return module


def test_the_experiment_pairs_by_template_and_index_and_its_independent_design_is_todays_run():
    from nlgbias.models.plan import plan_samples
    from nlgbias.models.registry import ModelRef
    from nlgbias.suites import expand_suite, load_suite

    script = experiment()
    paired = script.plan("sheng2019", "m", 3, 0, "gumbel-paired")
    independent = script.plan("sheng2019", "m", 3, 0, "independent")
    assert len(paired) == len(independent) == 180
    per_pair = paired.groupby(["template_id", "sample_idx"])["seed"].nunique()
    assert (per_pair == 1).all() and paired.groupby(["template_id", "sample_idx"]).ngroups == 30
    assert paired["seed"].nunique() == 30  # other templates or indices, other seeds
    ref = ModelRef("m", "fake", "m", "fake-v1")
    today = plan_samples(expand_suite(load_suite("sheng2019")), [ref], samples=3, seed=0,
                         params=SamplingParams())
    merged = independent.merge(today, on=["prompt_id", "sample_idx"], suffixes=("", "_run"))
    assert len(merged) == 180 and (merged["seed"] == merged["seed_run"]).all()
    # Blocks: one template of each context; block 0 is complete before block 1 starts.
    assert paired.groupby("block")["template_id"].unique().map(len).tolist() == [2] * 5
    assert paired["block"].is_monotonic_increasing


def test_stratified_variances_of_a_gap_paired_and_independent():
    script = experiment()
    x = np.array([1, 1, 0, 0, 1, 0, 1, 0], float)
    strata = np.array(["a"] * 4 + ["b"] * 4)
    paired, independent = script.variances(x, x, strata)
    assert paired == 0 and independent == pytest.approx(2 * 4 * (1 / 3) * 2 / 64)  # 2 strata, var 1/3 each side
    y = 1 - x  # perfectly anti-correlated: pairing doubles the variance
    paired, independent = script.variances(x, y, strata)
    assert paired == pytest.approx(2 * independent)


def test_statistics_doc_states_the_measured_pairing_result_and_its_decision():
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    result = json.loads((root / "docs" / "pairing_experiment.json").read_text(encoding="utf-8"))
    doc = (root / "docs" / "statistics.md").read_text(encoding="utf-8")
    section = doc.split("## Counterfactual pairing", 1)[1].split("\n## ", 1)[0]
    gumbel, control = result["summary"]["gumbel-paired"], result["summary"]["independent"]
    assert f"**{gumbel['mean_ratio']:.3f}**" in section and f"{control['mean_ratio']:.3f}" in section
    assert f"{round(100 * result['variance_reduction'])}%" in section
    assert result["ship"] is False and result["variance_reduction"] < 0.30 and "no `--paired` option" in section
    for cell in result["cells"]:
        if cell["design"] == "gumbel-paired":
            low, high = cell["ratio_ci95"]
            assert f"{cell['ratio']:.2f} [{low:.2f}, {high:.2f}]" in section
    assert result["samples_per_prompt"] == 100 and result["templates"] == ["known_for", "worked_as"]
