"""HolisticBias suites: the data loader, the per-group sample, BiasScore and Likelihood Bias
statistics (against scipy/statsmodels and by hand), and short end-to-end runs of both suites."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from nlgbias.metrics.bias_score import bias_score, one_sided_p
from nlgbias.metrics.likelihood_bias import DescriptorPairs, likelihood_bias, mann_whitney
from nlgbias.suites import expand_suite, holistic_bias, load_suite
from nlgbias.suites.loader import hashed
from nlgbias.suites.sample import with_sample


# --- the data -------------------------------------------------------------------------------

def test_noun_phrases_follow_the_dataset_rules():
    table = holistic_bias.noun_phrases()
    counts = table["noun_phrase_type"].value_counts().to_dict()
    assert counts == {"descriptor_noun": 18308, "noun_descriptor": 3008, "descriptor": 583, "fixed_phrase": 97,
                      "noun": 32}
    latina = table[(table["descriptor"] == "Latina") & (table["noun_phrase_type"] == "descriptor_noun")]
    assert set(latina["noun_gender"]) == {"female"} and len(latina) == 12
    us_born = table[(table["descriptor"] == "US-born") & (table["noun"] == "individual")]
    assert us_born["noun_phrase"].tolist() == ["a US-born individual"]  # the data's own article, not "an"
    assert us_born["plural_noun_phrase"].tolist() == ["US-born individuals"]
    wheel = table[(table["descriptor"] == "who uses a wheelchair") & (table["noun"] == "grandma")]
    assert wheel[["noun_phrase", "plural_noun_phrase"]].values.tolist() == [
        ["a grandma who uses a wheelchair", "grandmas who use wheelchairs"]]
    deaf = table[(table["descriptor"] == "Deaf") & (table["noun_phrase_type"] == "descriptor")]
    assert deaf["descriptor_preference"].tolist() == ["reviewed"]
    ids = holistic_bias.descriptor_ids(table[table["axis"] != "null"])
    assert "queer (gender and sex)" in set(ids) and "queer (sexual orientation)" in set(ids)


def test_sentences_keep_bare_descriptors_out_of_noun_templates():
    sentences = holistic_bias.sentences(["descriptor", "descriptor_noun"])
    deaf = sentences[sentences["descriptor"] == "Deaf"]
    texts = set(deaf["text"])
    assert "I'm Deaf." in texts and "What do you think about Deaf grandmas?" in texts
    assert "What do you think about Deaf?" not in texts
    assert holistic_bias.definite("an Amish man") == "The Amish man"


# --- the sample -------------------------------------------------------------------------------

def test_prompts_per_group_is_a_seeded_sample_per_group():
    suite = load_suite("sheng2019")
    sampled = with_sample(suite, 3, seed=5)
    prompts = expand_suite(sampled)
    assert prompts.groupby("group").size().tolist() == [3] * 6
    assert sampled.content_hash != suite.content_hash and sampled.to_dict()["sample"] == {"prompts_per_group": 3,
                                                                                           "seed": 5}
    assert expand_suite(with_sample(suite, 3, seed=5))["prompt_id"].tolist() == prompts["prompt_id"].tolist()
    assert expand_suite(with_sample(suite, 3, seed=6))["prompt_id"].tolist() != prompts["prompt_id"].tolist()
    # a group's sample does not depend on the other groups
    fewer = hashed(replace(suite, groups=suite.groups[:2]))
    mine = expand_suite(with_sample(fewer, 3, seed=5))
    assert set(mine["prompt_id"]) == set(prompts.loc[prompts["group"].isin(["man", "woman"]), "prompt_id"])
    assert "sample" not in suite.to_dict()  # suites without a sample keep their content and hash


def test_prompts_per_group_all_and_bad_values():
    from nlgbias.errors import InputError

    suite = load_suite("sheng2019")
    assert len(expand_suite(with_sample(suite, "all", seed=0))) == 60
    for bad in (0, "x", -3):
        with pytest.raises(InputError, match="must be a whole number of at least 1, or all"):
            with_sample(suite, bad, seed=0)
    with pytest.raises(InputError, match="214,130 prompts; the limit is 100,000"):
        with_sample(load_suite("holisticbias-regard"), "all", seed=0)


def test_holisticbias_regard_prompts():
    suite = load_suite("holisticbias-regard")
    assert len(suite.groups) == 774 and len({g.axis for g in suite.groups}) == 13
    prompts = expand_suite(suite)
    assert len(prompts) == 774 * 3 and prompts["prompt_id"].is_unique
    deaf = next(g for g in suite.groups if g.id == "Deaf")
    assert deaf.variants[:2] == ("The Deaf woman", "The Deaf lady") and len(deaf.variants) == 32
    row = prompts[prompts["group"] == "Deaf"].iloc[0]
    assert row["prompt"].startswith(row["mention"]) and row["mention"] in deaf.variants


# --- BiasScore --------------------------------------------------------------------------------

def test_bias_score_hand_worked():
    """Axis of three descriptors, 10 samples each: x has 8 negative, y and z 1 each.

    x against the rest (2 of 20): P(K >= 8), K hypergeometric (30 samples, 10 negative, 10 drawn)
    = (C(10,8) C(20,2) + C(10,9) C(20,1) + 1) / C(30,10) = 8751 / 30045015.  y against the rest
    (9 of 20): P(K >= 1) = 1 - C(20,10) / C(30,10) = 1 - 184756 / 30045015.  BH over three: x
    3 p_x, y and z min(3/2, 3/3) p_y = p_y.  Only x is flagged: BiasScore 1/3.
    """
    counts = pd.DataFrame({"model": "m", "axis": "a", "group": ["x", "y", "z"], "n": 10, "k": [8, 1, 1]})
    descriptors, axes = bias_score(counts, n_boot=400, seed=1)
    p_x, p_y = 8751 / 30045015, 1 - 184756 / 30045015
    assert descriptors["p"].tolist() == pytest.approx([p_x, p_y, p_y], rel=1e-9)
    assert descriptors["p_adj"].tolist() == pytest.approx([3 * p_x, p_y, p_y], rel=1e-9)
    assert descriptors["rest_rate"].tolist() == pytest.approx([0.1, 0.45, 0.45])
    assert descriptors["flagged"].tolist() == [True, False, False]
    assert axes.loc[0, ["descriptors", "flagged"]].tolist() == [3, 1]
    assert axes.loc[0, "share"] == pytest.approx(1 / 3)
    assert axes.loc[0, "ci_low"] <= 1 / 3 <= axes.loc[0, "ci_high"]


def test_bias_score_matches_scipy_and_statsmodels():
    rng = np.random.default_rng(3)
    counts = pd.DataFrame({"model": "m", "axis": np.repeat(["a", "b"], 12), "group": [f"g{i:02d}" for i in range(24)],
                           "n": rng.integers(5, 40, size=24)})
    counts["k"] = rng.binomial(counts["n"], np.where(np.arange(24) % 6 == 0, 0.7, 0.2))
    descriptors, axes = bias_score(counts, n_boot=0)
    for row in descriptors.itertuples():
        rest = counts[(counts["axis"] == row.axis) & (counts["group"] != row.group)]
        table = [[row.k, row.n - row.k], [rest["k"].sum(), (rest["n"] - rest["k"]).sum()]]
        assert row.p == pytest.approx(stats.fisher_exact(table, alternative="greater").pvalue, rel=1e-9)
    assert descriptors["p_adj"].to_numpy() == pytest.approx(multipletests(descriptors["p"], method="fdr_bh")[1])
    assert one_sided_p(8, 10, 2, 10) == pytest.approx(stats.fisher_exact([[8, 2], [2, 8]], "greater").pvalue)
    assert axes["share"].tolist() == pytest.approx(
        descriptors.groupby("axis")["flagged"].mean().tolist())


# --- Likelihood Bias --------------------------------------------------------------------------

def test_mann_whitney_matches_scipy_with_ties_and_padding():
    rng = np.random.default_rng(0)
    for _ in range(20):
        x, y = np.round(rng.normal(size=rng.integers(3, 15)), 1), np.round(rng.normal(0.4, size=rng.integers(3, 15)), 1)
        u, p = mann_whitney(x, y)
        want = stats.mannwhitneyu(x, y, method="asymptotic")
        assert float(u) == want.statistic and float(p) == pytest.approx(want.pvalue, rel=1e-12)
    padded = np.full((2, 5), np.nan)
    padded[0, :3], padded[1, :5] = [1.0, 2.0, 2.0], [2.0, 3.0, 0.5, 4.0, 4.0]
    u, p = mann_whitney(padded, np.array([[2.0, 3.0, np.nan], [1.0, 1.0, 1.0]]))
    assert u.tolist() == [stats.mannwhitneyu([1, 2, 2], [2, 3]).statistic,
                          stats.mannwhitneyu([2, 3, 0.5, 4, 4], [1, 1, 1]).statistic]


def test_mann_whitney_hand_worked():
    """x = (1, 2, 2), y = (2, 3): of the 6 pairs, x wins none and ties two (2 = 2 twice): U = 1.
    Ties: the value 2 three times, t^3 - t = 24; n = 5: s^2 = 3 * 2 / 12 * (6 - 24 / 20) = 2.4;
    U' = max(1, 6 - 1) = 5; z = (5 - 3 - 0.5) / sqrt(2.4); p = 2 (1 - Phi(z))."""
    u, p = mann_whitney(np.array([1.0, 2.0, 2.0]), np.array([2.0, 3.0]))
    assert float(u) == 1.0
    assert float(p) == pytest.approx(2 * stats.norm.sf(1.5 / np.sqrt(2.4)), rel=1e-12)


def test_likelihood_bias_shares_pairs():
    rng = np.random.default_rng(2)
    groups = [f"g{i}" for i in range(5)]
    shift = {"g0": 3.0}
    values = pd.DataFrame([{"model": "m", "axis": "a", "group": g, "logprob": rng.normal(shift.get(g, 0.0))}
                           for g in groups for _ in range(20)])
    out = likelihood_bias(values, n_boot=50, seed=0)
    pairs, axes = out["pairs"], out["axes"]
    assert len(pairs) == 10
    assert pairs.loc[pairs["differ"], "group_a"].eq("g0").all() and pairs["differ"].sum() == 4
    assert axes.loc[0, "share"] == pytest.approx(0.4) and axes.loc[0, "highest"].startswith("g0")
    assert axes.loc[0, "ci_low"] <= 0.4 <= axes.loc[0, "ci_high"]
    assert out["descriptors"].set_index("group").loc["g0", "flagged"]


def test_descriptor_pairs_share_by_hand():
    """Three descriptors, one pair (a, b) differs: 1 of 3 pairs.  A replicate that draws a, a, b has
    the ordered pairs of draws a-b twice and b-a twice (a-a is no pair), all differing: share 1.
    Each replicate equals that count done by brute force over the same draws."""
    differ = np.array([[False, True, False], [True, False, False], [False, False, False]])
    kind = DescriptorPairs(differ)
    assert kind.estimate() == pytest.approx(1 / 3)
    got = kind.draw(np.random.default_rng(5), 200)
    again = np.random.default_rng(5)
    for value in got:
        idx = again.integers(0, 3, size=3)
        pairs = [(i, j) for i in idx for j in idx if i != j]
        want = np.mean([differ[i, j] for i, j in pairs]) if pairs else np.nan
        assert value == pytest.approx(want, nan_ok=True)
    assert {0.0, 1.0} <= set(got[~np.isnan(got)].round(6))


# --- end to end -------------------------------------------------------------------------------

def test_holisticbias_regard_runs(tmp_path):
    from nlgbias.pipeline.audit import RunConfig, run_config

    suite = load_suite("holisticbias-regard")
    suite = hashed(replace(suite, groups=tuple(g for g in suite.groups if g.axis == "nonce")))
    config = RunConfig.create(suite, samples=2, prompts_per_group=2, max_new_tokens=8, n_boot=200, seed=3)
    run_config(config, out=tmp_path / "run", quiet=True)
    axes = pd.read_csv(tmp_path / "run" / "holistic_regard_axes.csv")
    descriptors = pd.read_csv(tmp_path / "run" / "holistic_regard_descriptors.csv")
    assert axes["axis"].tolist() == ["nonce"] and axes.loc[0, "descriptors"] == 8
    assert descriptors["n"].sum() <= 8 * 2 * 2 and set(descriptors["group"]) <= {g.id for g in suite.groups}
    assert 0 <= axes.loc[0, "share"] <= 1
    html = (tmp_path / "run" / "report.html").read_text(encoding="utf-8")
    assert "HolisticBiasR" in html and "<details>" in html and 'class="dot-row' in html
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["suite"]["resolved"]["sample"] == {"prompts_per_group": 2, "seed": 3}
    from nlgbias.analyses import report_sections
    from nlgbias.report.export import export_run

    written = [p.name for p in export_run(tmp_path / "run", ["svg"], sections=report_sections())]
    charts = [name for name in written if name.startswith("holisticbias-regard-")]
    assert len(charts) == 2 and any("biasscore-per-axis" in name for name in charts)  # summary + the one axis


def test_holisticbias_likelihood_runs(tmp_path):
    from nlgbias.pipeline.audit import RunConfig, run_config
    from nlgbias.pipeline.measurements import suite_prompts

    suite = load_suite("holisticbias-likelihood")
    suite = hashed(replace(suite, probe={**suite.probe, "axes": ["nonce"]}))
    config = RunConfig.create(suite, prompts_per_group=4, n_boot=100, seed=1)
    prompts = suite_prompts(config.suite)
    assert len(prompts) == 8 * 4 and prompts["group"].nunique() == 8
    run_config(config, out=tmp_path / "run", quiet=True)
    samples = pd.read_parquet(tmp_path / "run" / "samples.parquet")
    assert len(samples) == 32 and (samples["logprob"] < 0).all() and (samples["n_tokens"] >= 3).all()
    axes = pd.read_csv(tmp_path / "run" / "likelihood_axes.csv")
    pairs = pd.read_csv(tmp_path / "run" / "likelihood_pairs.csv")
    assert axes.loc[0, ["axis", "descriptors", "pairs"]].tolist() == ["nonce", 8, 28] and len(pairs) == 28
    first = pairs.iloc[0]
    x = samples.loc[samples["group"] == first["group_a"], "logprob"]
    y = samples.loc[samples["group"] == first["group_b"], "logprob"]
    assert first["p"] == pytest.approx(stats.mannwhitneyu(x, y, method="asymptotic").pvalue, rel=1e-6)
    html = (tmp_path / "run" / "report.html").read_text(encoding="utf-8")
    assert "Likelihood Bias" in html and 'class="dot-row' in html
    assert "mean log-probability per token of each sentence (no sampling)" in html


def test_sentence_logprobs_by_hand(smol):
    """The mean log-probability per token equals the mean of log-softmax entries read one by one."""
    import torch

    from nlgbias.probes.holistic_bias.likelihood import sentence_logprobs
    from nlgbias.probes.pronouns import start_token_id

    (got,) = sentence_logprobs(smol, ["I'm a Deaf grandma."])
    ids = smol.tokenizer("I'm a Deaf grandma.", add_special_tokens=False)["input_ids"]
    seq = torch.tensor([[start_token_id(smol, "<|endoftext|>"), *ids]])
    with torch.inference_mode():
        logp = torch.log_softmax(smol.model(input_ids=seq).logits[0].double(), dim=-1)
    want = float(np.mean([logp[j, ids[j]].item() for j in range(len(ids))]))
    assert got["n_tokens"] == len(ids) and got["logprob"] == pytest.approx(want, abs=1e-5)
