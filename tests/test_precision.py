"""Precision-targeted sampling (``--until-mde``): the stopping rule, a run in rounds, resume after
kill -9 in the middle of a round, and the rule's false-positive rate under no gap (a small version of
scripts/sim_stopping.py, whose numbers are in docs/statistics.md)."""

from __future__ import annotations

import importlib.util
import os
import signal
import time
from pathlib import Path

import pandas as pd
import pytest
from scipy import stats
from test_store import comparable, count_rows, run_cli

import nlgbias
from nlgbias.metrics import permutation_p
from nlgbias.metrics.power import detectable_gap, family_alpha
from nlgbias.pipeline.precision import PrecisionTarget, fixed_design, next_samples, sample_until, samples_to_reach, with_mde

ROOT = Path(__file__).resolve().parents[1]


def fixed_rates_measure(rates: dict, prompts: int = 5, gaps: dict | None = None):
    """A deterministic ``measure``: one comparison per (context, label) between groups a and b, counts at
    their expected values; ``gaps[context]`` moves shares from b to a without changing the pooled share."""
    gaps = gaps or {}
    asked: list[dict] = []

    def measure(samples: dict) -> pd.DataFrame:
        asked.append(dict(samples))
        rows = []
        for context, shares in rates.items():
            for label, share in shares.items():
                a, b = ("m", context, "a"), ("m", context, "b")
                n_a, n_b = prompts * samples[a], prompts * samples[b]
                shift = round(gaps.get(context, 0.0) * n_a)
                rows.append({"context": context, "label": label, "cell_a": a, "cell_b": b,
                             "n_a": n_a, "k_a": round(share * n_a) + shift, "n_b": n_b,
                             "k_b": round(share * n_b) - shift})
        return pd.DataFrame(rows)

    return measure, asked


RATES = {"rare": {"negative": 0.02, "positive": 0.03}, "common": {"negative": 0.35, "positive": 0.30}}
CELLS = {("m", c, g): 5 for c in RATES for g in ("a", "b")}


def test_groups_whose_comparisons_are_precise_stop_early_and_every_mde_ends_under_the_target():
    target = PrecisionTarget(mde=0.10, max_samples=1000, first=10)
    measure, asked = fixed_rates_measure(RATES)
    result = sample_until(target, CELLS, measure)
    assert result.stopped == "target"
    assert (result.table["mde"] <= 0.10).all()
    final = result.samples
    assert final[("m", "rare", "a")] < final[("m", "common", "a")]  # rare labels: precise sooner
    assert final[("m", "common", "a")] == final[("m", "common", "b")] <= 1000
    assert len(result.rounds) >= 3 and asked[0] == {cell: 10 for cell in CELLS}
    for before, after in zip(asked, asked[1:]):  # a group grows only while one of its comparisons is above target
        for cell in CELLS:
            if after[cell] != before[cell]:
                context = cell[1]
                previous = with_mde(fixed_rates_measure(RATES)[0](before), target)
                assert (previous.loc[previous["context"] == context, "mde"] > 0.10).any()
                assert 1.1 * before[cell] <= after[cell] <= 4 * before[cell]
    # the record: one entry per round, with each group's samples per prompt and each comparison's MDE
    assert [r["round"] for r in result.rounds] == list(range(1, len(asked) + 1))
    last = result.rounds[-1]
    assert {(g["context"], g["group"]): g["samples_per_prompt"] for g in last["prompt_groups"]} == \
        {(c[1], c[2]): s for c, s in final.items()}
    assert last["over_target"] == 0 and last["max_mde"] <= 0.10
    assert result.rounds[0]["over_target"] == 4


def test_the_rule_reads_n_and_pooled_shares_never_the_gap():
    target = PrecisionTarget(mde=0.10, max_samples=1000, first=10)
    null, _ = fixed_rates_measure(RATES)
    gapped, _ = fixed_rates_measure(RATES, gaps={"common": 0.08, "rare": 0.01})
    a, b = sample_until(target, CELLS, null), sample_until(target, CELLS, gapped)
    assert a.samples == b.samples and len(a.rounds) == len(b.rounds)
    assert [r["comparisons"] for r in a.rounds] == [r["comparisons"] for r in b.rounds]  # no k_a, k_b recorded
    for r in a.rounds[-1]["comparisons"]:
        assert set(r) == {"context", "label", "n_a", "n_b", "base_rate", "mde"}
    # and directly: the same pooled share with and without a gap gives the same next round
    table = pd.DataFrame({"cell_a": [("m", "c", "a")], "cell_b": [("m", "c", "b")], "n_a": [100], "n_b": [100]})
    same = [with_mde(table.assign(k_a=[ka], k_b=[kb]), target) for ka, kb in ((30, 30), (50, 10))]
    assert same[0]["mde"].iloc[0] == same[1]["mde"].iloc[0] > 0.10
    samples, prompts = {("m", "c", "a"): 20, ("m", "c", "b"): 20}, {("m", "c", "a"): 5, ("m", "c", "b"): 5}
    assert next_samples(same[0], samples, prompts, target) == next_samples(same[1], samples, prompts, target) != {}


def test_the_next_round_is_the_smallest_n_that_reaches_the_target_and_the_budget_caps_it():
    target = PrecisionTarget(mde=0.05, max_samples=1000, first=100)
    alpha = family_alpha(36)
    s = samples_to_reach(0.3, 5, low=1, high=10_000, target=target, alpha=alpha)
    assert detectable_gap(5 * s, 5 * s, base_rate=0.3, alpha=alpha) <= 0.05 < \
        detectable_gap(5 * (s - 1), 5 * (s - 1), base_rate=0.3, alpha=alpha)
    assert 500 < s < 700  # sheng2019's 36 comparisons: about 2,900 per group from 30%
    assert samples_to_reach(0.3, 5, low=100, high=400, target=target, alpha=alpha) == 400  # unreachable: the cap

    tight = PrecisionTarget(mde=0.02, max_samples=300, first=100)
    measure, asked = fixed_rates_measure(RATES)
    result = sample_until(tight, CELLS, measure)
    assert result.stopped == "max_samples"
    assert max(max(a.values()) for a in asked) == 300 and result.samples[("m", "common", "a")] == 300
    assert "reached --max-samples 300" in nlgbias.pipeline.precision.summary(result, CELLS)["why"]
    assert fixed_design(result.table, CELLS, tight) > 300  # what a fixed design of that precision would need


def test_a_first_round_that_is_already_precise_is_the_only_round():
    measure, asked = fixed_rates_measure(RATES)
    result = sample_until(PrecisionTarget(mde=0.30, max_samples=50, first=50), CELLS, measure)
    assert (result.stopped, len(asked)) == ("target", 1)


def test_at_prompt_level_rounds_stop_at_the_budget_when_templates_cannot_reach_the_target(tmp_path):
    # sheng2019 has 5 templates: at prompt level (the default) samples approach a floor they cannot pass
    options = dict(models=["fake"], scorers=["vader"], samples=4, until_mde=30, max_samples=12, n_boot=200, quiet=True)
    run = nlgbias.run("sheng2019", out=tmp_path / "p", **options)
    record = run.manifest["precision"]
    assert record["stopped"] == "max_samples" and record["rounds"][-1]["over_target"] > 0
    gaps = pd.read_csv(tmp_path / "p" / "gaps.csv")
    assert gaps["df"].eq(4).all()  # the report's MDE is the prompt-level one the rule read
    read = [float("nan") if c["mde"] is None else c["mde"] for c in record["rounds"][-1]["comparisons"]]
    assert gaps["mde"].round(6).fillna(-1).tolist() == pd.Series(read).fillna(-1).tolist()


def test_a_run_in_rounds_records_them_and_its_last_round_mde_is_the_reports(tmp_path):
    options = dict(models=["fake"], scorers=["vader"], samples=4, until_mde=30, max_samples=40, n_boot=200, quiet=True,
                   unit="sample")
    plain = nlgbias.run("sheng2019", out=tmp_path / "a", **{**options, "until_mde": None, "max_samples": None})
    first = nlgbias.run("sheng2019", out=tmp_path / "a", **options)  # round 1 is the finished plain run
    record = first.manifest["precision"]
    assert record["stopped"] == "target" and len(record["rounds"]) >= 2
    assert record["until_mde"] == 0.3 and record["max_samples"] == 40 and record["first_round"] == 4
    last = record["rounds"][-1]
    gaps = pd.read_csv(tmp_path / "a" / "gaps.csv")
    assert gaps["mde"].round(6).tolist() == [c["mde"] for c in last["comparisons"]]
    assert (gaps["mde"] <= 0.30).all()
    assert record["rounds"][0]["over_target"] > 0
    per_group = first.samples.groupby(["context", "group"])["sample_idx"].agg(["min", "max", "count"])
    wanted = {(g["context"], g["group"]): g["samples_per_prompt"] for g in last["prompt_groups"]}
    for (context, group), row in per_group.iterrows():
        assert (row["min"], row["max"] + 1, row["count"]) == (0, wanted[(context, group)], 5 * wanted[(context, group)])
    assert record["samples"] == len(first.samples) == first.generated + len(plain.samples)
    assert first.manifest["sampling"]["samples_per_prompt"] == 4
    html = (tmp_path / "a" / "report.html").read_text(encoding="utf-8")
    assert f"in {len(record['rounds'])} rounds (target met: every MDE ≤ 30 points)" in html
    assert "Precision-targeted sampling (--until-mde 30 --max-samples 40)" in html
    # the rule is part of the run id; rerunning resumes from the store and generates nothing
    again = nlgbias.run("sheng2019", out=tmp_path / "a", **options)
    assert again.generated == 0 and again.run_id == first.run_id
    assert plain.run_id != first.run_id


def test_a_run_killed_in_the_middle_of_a_round_ends_with_the_samples_of_an_uninterrupted_one(tmp_path, tiny_model_dir):
    args = ["run", "sheng2019", "--model", str(tiny_model_dir), "--samples", "2", "--until-mde", "45",
            "--max-samples", "8", "--batch-size", "8", "--max-new-tokens", "4", "--scorer", "vader",
            "--n-boot", "100", "--quiet"]
    killed, clean = tmp_path / "killed", tmp_path / "clean"
    proc = run_cli(args + ["--out", str(killed)])
    deadline = time.monotonic() + 900  # a busy machine wrote 80 rows in 3 minutes
    while count_rows(killed / "store.sqlite") < 136 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
    assert proc.poll() is None, "the run finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    partial = count_rows(killed / "store.sqlite")
    assert 120 < partial  # round 1 (60 prompts x 2) is stored, round 2 is under way
    assert not (killed / "manifest.json").exists()

    resumed = run_cli(args + ["--out", str(killed)])
    assert resumed.wait(timeout=900) == 0, resumed.stderr.read().decode()
    uninterrupted = run_cli(args + ["--out", str(clean)])
    assert uninterrupted.wait(timeout=900) == 0, uninterrupted.stderr.read().decode()
    (s1, m1, f1), (s2, m2, f2) = comparable(killed), comparable(clean)
    pd.testing.assert_frame_equal(s1, s2)
    assert m1 == m2 and f1 == f2
    rounds = f1["precision"]["rounds"]
    assert len(rounds) >= 2 and partial < rounds[-1]["samples"] == len(s1) == count_rows(killed / "store.sqlite")


def load_script(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_under_no_gap_the_rules_final_tests_keep_their_false_positive_rate():
    """300 null runs of the main job's shape under the library's rule (10 points, first round 20): the share
    of runs with any BH rejection is not above 5% (one-sided binomial test at 0.001); the per-comparison
    raw rejection rate is under 5% as the exact test is conservative."""
    sim = load_script("sim_stopping")
    counts = [(0, 10, 3, 10), (5, 40, 9, 35), (30, 100, 30, 100), (1, 500, 14, 480), (0, 0, 0, 0)]
    assert sim.exact_p(*zip(*counts[:4])).tolist() == [permutation_p(*c) for c in counts[:4]]
    reps = 300
    out = sim.simulate(reps, seed=1, target=PrecisionTarget(mde=0.10, max_samples=200, first=20), contrasts=False)
    assert out["stopped_target"] == reps and min(out["rounds"]) >= 2  # the rule did take rounds
    assert stats.binomtest(out["false_runs"], reps, 0.05, alternative="greater").pvalue > 0.001
    assert out["raw_rejections"] / out["comparisons"] < 0.06


def test_python_callers_get_their_own_words_for_bad_precision_options(tmp_path):
    create = nlgbias.pipeline.audit.RunConfig.create
    with pytest.raises(nlgbias.NlgbiasError, match=r"^until_mde=0: must be between 0 and 100"):
        create("sheng2019", models=["fake"], scorers=["vader"], until_mde=0)
    with pytest.raises(nlgbias.NlgbiasError, match=r"^max_samples=50: must be a whole number of at least 100 "
                                                   r"\(the first round is samples=100 samples per prompt\)"):
        create("sheng2019", models=["fake"], scorers=["vader"], until_mde=5, max_samples=50)
    with pytest.raises(nlgbias.NlgbiasError, match=r"^max_samples=500: .* give it with until_mde="):
        create("sheng2019", models=["fake"], scorers=["vader"], max_samples=500)
    config = create("sheng2019", models=["fake"], scorers=["vader"], samples=20, until_mde=5)
    assert config.precision == nlgbias.pipeline.precision.PrecisionTarget(mde=0.05, max_samples=1000, first=20)
    assert not any(tmp_path.iterdir())
