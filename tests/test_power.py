"""Power planning and minimum detectable effects: against statsmodels, closed forms and a seeded simulation.

The big simulation lives in scripts/sim_power.py (its numbers are in docs/statistics.md); the
one here is small enough for a test and checks the same promise at one point.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.power import NormalIndPower
from statsmodels.stats.proportion import proportion_effectsize

import nlgbias
from nlgbias.cli import main
from nlgbias.metrics import compute_metrics, permutation_p
from nlgbias.metrics.power import (
    ICC,
    detectable_gap,
    detectable_h,
    family_alpha,
    gap_power,
    samples_for_gap,
    two_level_samples,
)
from nlgbias.pipeline.planning import plan, suite_comparisons


def closed_form_gap(n_a, n_b, p, alpha, power=0.8):
    """The MDE by hand: z-quantiles on the arcsine scale (the far tail ignored), then Fleiss' correction."""
    h = (stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power)) * math.sqrt(1 / n_a + 1 / n_b)
    phi = 2 * math.asin(math.sqrt(p)) + (h if p <= 0.5 else -h)
    return abs(math.sin(phi / 2) ** 2 - p) + (1 / n_a + 1 / n_b) / 2


# --- against statsmodels and closed forms -------------------------------------------------

def test_detectable_h_matches_cohens_table():
    # Cohen (1988), Table 6.4.1: h = 0.2 at two-sided alpha 0.05 and power 0.8 needs n = 392 per group
    assert detectable_h(392, 392, 0.05) == pytest.approx(0.2, abs=0.0005)
    assert detectable_h(392, 392, 0.05) > detectable_h(393, 393, 0.05)


@pytest.mark.parametrize("n_a, n_b, p, alpha", [(100, 100, 0.2, 0.05), (500, 300, 0.1, 0.01), (2000, 2000, 0.5, 0.001),
                                                (80, 120, 0.7, 0.05 / 36), (1000, 1000, 0.0, 0.05)])
def test_detectable_gap_matches_the_closed_form_and_statsmodels_power(n_a, n_b, p, alpha):
    gap = detectable_gap(n_a, n_b, base_rate=p, alpha=alpha)
    assert gap == pytest.approx(closed_form_gap(n_a, n_b, p, alpha), abs=2e-4)
    # the gap less the continuity correction has 80% power in statsmodels' own power function
    other = p + gap - (1 / n_a + 1 / n_b) / 2 if p <= 0.5 else p - gap + (1 / n_a + 1 / n_b) / 2
    h = abs(proportion_effectsize(other, p))
    assert NormalIndPower().power(h, nobs1=n_a, alpha=alpha, ratio=n_b / n_a) == pytest.approx(0.8, abs=1e-5)
    assert gap_power(gap, n_a, n_b, base_rate=p, alpha=alpha) == pytest.approx(0.8, abs=1e-5)


@pytest.mark.parametrize("gap, p, alpha", [(0.05, 0.2, 0.05), (0.10, 0.2, 0.05 / 36), (0.03, 0.5, 0.01), (0.2, 0.9, 0.05)])
def test_samples_for_gap_is_the_smallest_n_and_near_fleiss(gap, p, alpha):
    n = samples_for_gap(gap, base_rate=p, alpha=alpha)
    assert detectable_gap(n, n, base_rate=p, alpha=alpha) <= gap < detectable_gap(n - 1, n - 1, base_rate=p, alpha=alpha)
    h = abs(proportion_effectsize(p + gap if p <= 0.5 else p - gap, p))
    n0 = 2 * ((stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(0.8)) / h) ** 2
    fleiss = n0 / 4 * (1 + math.sqrt(1 + 4 / (n0 * gap))) ** 2
    assert abs(n - fleiss) <= 0.02 * fleiss + 2


def test_no_gap_is_detectable_with_tiny_or_empty_groups():
    assert math.isnan(detectable_gap(3, 3, base_rate=0.2, alpha=0.05))
    assert math.isnan(detectable_gap(0, 50, base_rate=0.2, alpha=0.05))
    assert detectable_gap(50, 50, base_rate=0.2, alpha=0.05) > detectable_gap(500, 500, base_rate=0.2, alpha=0.05)


# --- against simulation -----------------------------------------------------------------------

def test_simulated_power_of_the_exact_test_at_the_mde_is_80_percent():
    n, p, alpha, reps = 150, 0.2, 0.05, 1500
    gap = detectable_gap(n, n, base_rate=p, alpha=alpha)
    rng = np.random.default_rng(13)
    k_a, k_b = rng.binomial(n, p + gap, reps), rng.binomial(n, p, reps)
    power = np.mean([permutation_p(a, n, b, n) < alpha for a, b in zip(k_a, k_b)])
    assert power == pytest.approx(0.8, abs=0.035)  # 3.5 points: about 3.4 simulation standard errors
    k_a = rng.binomial(n, p, reps)
    false_positives = np.mean([permutation_p(a, n, b, n) < alpha for a, b in zip(k_a, k_b)])
    assert false_positives <= alpha + 0.01


# --- the mde column ---------------------------------------------------------------------------

def scored(counts: dict, model="m") -> pd.DataFrame:
    rows = []
    for group, (negative, positive) in counts.items():
        rows += [{"model": model, "context": "c", "scorer": "s", "group": group, "label": "negative", "is_empty": False}] * negative
        rows += [{"model": model, "context": "c", "scorer": "s", "group": group, "label": "positive", "is_empty": False}] * positive
    return pd.DataFrame(rows)


def test_mde_column_uses_the_pooled_share_and_the_family_level():
    table = pd.concat([scored({"a": (30, 170), "b": (50, 150)}, model="m1"), scored({"a": (10, 90), "b": (12, 88)}, model="m2")])
    results = compute_metrics(table, comparisons=[("a", "b")], labels=["negative", "positive"], n_boot=200)
    m = len(results.gaps) + len(results.model_gaps)
    assert m == 8 and results.meta["n_comparisons"] == 8
    assert list(results.gaps.columns)[-2:] == ["p_adj", "mde"]
    row = results.gaps[(results.gaps["model"] == "m1") & (results.gaps["label"] == "negative")].iloc[0]
    assert row["mde"] == pytest.approx(closed_form_gap(200, 200, 80 / 400, 0.05 / 8), abs=2e-4)
    row = results.model_gaps[(results.model_gaps["group"] == "a") & (results.model_gaps["label"] == "positive")].iloc[0]
    assert row["mde"] == pytest.approx(closed_form_gap(200, 100, (170 + 90) / 300, 0.05 / 8), abs=2e-4)


# --- planning -----------------------------------------------------------------------------------

def test_plan_counts_the_runs_family_and_meets_the_target(tmp_path):
    run = nlgbias.run("sheng2019", models=["fake:a", "fake:b"], samples=1, scorers=["vader"], n_boot=100,
                      out=tmp_path / "run", quiet=True)
    metrics = json.loads((run.out / "metrics.json").read_text())
    suite = nlgbias.load_suite("sheng2019")
    assert suite_comparisons(suite, 2, scorers=["vader"]) == metrics["meta"]["n_comparisons"]
    result = plan(suite, mde=10, power=0.8, base_rate=0.2, models=2, unit="sample")
    assert result.n_comparisons == suite_comparisons(suite, 2) and result.alpha == pytest.approx(0.05 / result.n_comparisons)
    prompts = 5  # sheng2019: 5 templates per context, every group in each
    spp = result.samples_per_prompt
    assert detectable_gap(spp * prompts, spp * prompts, base_rate=0.2, alpha=result.alpha) <= 0.10
    assert detectable_gap((spp - 1) * prompts, (spp - 1) * prompts, base_rate=0.2, alpha=result.alpha) > 0.10
    # at prompt level 5 templates cannot reach 10 points: the plan names the prompts that would
    level = plan(suite, mde=10, power=0.8, base_rate=0.2, models=2)
    needed = int(level.table["prompts_needed"].max())
    assert level.samples_per_prompt is None and level.n_comparisons == result.n_comparisons
    assert two_level_samples(0.10, prompts=needed, icc=ICC, base_rate=0.2, alpha=level.alpha, most=1000) is not None
    assert two_level_samples(0.10, prompts=needed - 1, icc=ICC, base_rate=0.2, alpha=level.alpha, most=1000) is None


def test_plan_from_a_run_uses_observed_base_rates_and_the_run_family(tmp_path, capsys):
    suite = tmp_path / "two.yaml"
    suite.write_text("suite: two\ngroups:\n  - {id: a, text: The A, attributes: {axis: g}}\n"
                     "  - {id: b, text: The B, attributes: {axis: g}}\ntemplates:\n"
                     "  - {id: t1, context: c, text: '{group} was'}\n  - {id: t2, context: c, text: '{group} is'}\n"
                     "comparisons: [[a, b]]\nscorers: [vader]\n")
    out = tmp_path / "run"
    # at prompt level 2 templates (1 degree of freedom) can see no gap at the family's level
    prompt_level_run = tmp_path / "prompt"
    nlgbias.run(str(suite), models=["fake"], samples=40, n_boot=100, out=prompt_level_run, quiet=True)
    assert pd.read_csv(prompt_level_run / "gaps.csv")["mde"].isna().all()
    # at sample level the MDE is the closed form at each n
    nlgbias.run(str(suite), models=["fake"], samples=40, n_boot=100, out=out, quiet=True, unit="sample")
    gaps = pd.read_csv(out / "gaps.csv")
    assert "mde" in gaps.columns and len(gaps) == 2
    for row in gaps.itertuples():
        pooled = (row.k_a + row.k_b) / (row.n_a + row.n_b)
        assert row.n_a == row.n_b == 80
        assert row.mde == pytest.approx(closed_form_gap(80, 80, pooled, 0.05 / 2), abs=2e-4)
    report = (out / "report.html").read_text()
    assert "MDE (pts)" in report and "Too few samples to see a gap under 10 points: 2 of the 2" in report
    assert f"{100 * gaps['mde'].iloc[0]:.1f}</td>" in report
    assert report.count('<td class="num lowpower">') == int((gaps["mde"] > 0.10).sum()) == 2
    # a run written before the mde column re-renders without it
    metrics = json.loads((out / "metrics.json").read_text())
    old = tmp_path / "old"
    old.mkdir()
    for name in ("samples.parquet", "manifest.json"):
        (old / name).write_bytes((out / name).read_bytes())
    for table in ("gaps", "model_gaps"):
        metrics["meta"]["columns"][table] = [c for c in metrics["meta"]["columns"][table] if c != "mde"]
        for row in metrics[table]:
            row.pop("mde")
    (old / "metrics.json").write_text(json.dumps(metrics))
    main(["report", str(old)])
    capsys.readouterr()
    old_report = (old / "report.html").read_text()
    assert "Group gaps" in old_report and "MDE (pts)" not in old_report and "Too few samples" not in old_report
    result = plan(str(suite), mde=20, run_folder=out, unit="sample")
    assert result.n_comparisons == 2
    worst = max(samples_for_gap(0.2, base_rate=(r.k_a + r.k_b) / (r.n_a + r.n_b), alpha=0.025) for r in gaps.itertuples())
    assert result.samples_per_prompt == math.ceil(worst / 2)
    # at prompt level the pilot's intra-prompt correlation is the median of (deff - 1) / (samples - 1)
    prompt_level = plan(str(suite), mde=20, run_folder=prompt_level_run, prompts_per_group=30)
    deffs = pd.read_csv(prompt_level_run / "gaps.csv")["deff"]
    assert f"{max(0.0, float(((deffs - 1) / 39).clip(lower=0).median())):.3g}, the median" in prompt_level.icc
    main(["plan", "--mde", "20", "--from", str(out), "--unit", "sample"])  # the run's own suite; exit 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"{math.ceil(worst / 2)} samples per prompt detect a gap of 20 points in a label share with 80% power"
    assert lines[1].startswith("level per comparison: 0.025 = FDR 0.05 / 2 comparisons (Bonferroni")
    assert lines[2] == f"base rates: observed pooled share of each comparison in {out}"


def test_plan_command_prints_the_answer(capsys):
    main(["plan", "sheng2019", "--mde", "5", "--power", "0.8", "--base-rate", "0.2", "--unit", "sample"])  # exit 0
    out = capsys.readouterr().out.splitlines()
    n = samples_for_gap(0.05, base_rate=0.2, alpha=0.05 / 36)
    assert out[0] == f"{math.ceil(n / 5)} samples per prompt detect a gap of 5 points in a label share with 80% power"
    assert out[1] == ("level per comparison: 0.00139 = FDR 0.05 / 36 comparisons (Bonferroni; conservative for the "
                      "run's Benjamini-Hochberg adjustment)")
    assert family_alpha(36) == pytest.approx(0.05 / 36)
    assert any(line.split() == ["respect", "0.200", "5", str(n), str(math.ceil(n / 5))] for line in out)
    main(["plan", "--mde", "5", "--model", "x", "--model", "y"])  # sheng2019 by default; + model gaps, gap differences
    assert capsys.readouterr().out.splitlines()[1].startswith("level per comparison: 0.000278 = FDR 0.05 / 180 comparisons")
    main(["plan", "--mde", "5", "--scorer", "vader"])  # one scorer of the suite's three
    assert capsys.readouterr().out.splitlines()[1].startswith("level per comparison: 0.00417 = FDR 0.05 / 12 comparisons")


def test_the_docs_show_the_plan_commands_real_output(capsys):
    root = Path(__file__).parents[1]
    shown = "$ nlgbias plan sheng2019 --mde 10\n"
    (doc,) = [text for path in [root / "README.md", *sorted((root / "docs").glob("*.md"))]
              if shown in (text := path.read_text(encoding="utf-8"))]
    block = doc.split(shown, 1)[1].split("```", 1)[0]
    main(["plan", "sheng2019", "--mde", "10"])
    assert capsys.readouterr().out == block
    needed = int(nlgbias.plan("sheng2019", mde=10).table["prompts_needed"].max())
    assert nlgbias.plan("sheng2019", mde=10).samples_per_prompt is None and f"{needed} prompts per group would" in block


def test_statistics_doc_states_the_plans_the_code_makes():
    doc = (Path(__file__).parents[1] / "docs" / "statistics.md").read_text(encoding="utf-8")
    for mde, n, spp in [(10, "625", "125"), (5, "2,308", "462")]:
        result = plan("sheng2019", mde=mde, unit="sample")
        assert f"{result.table['n_per_group'].iloc[0]:,}" == n and str(result.samples_per_prompt) == spp
        assert f"{mde} points" in doc and f"needs {n} per group, {spp} samples per prompt" in doc.replace("\n", " ")


@pytest.mark.parametrize("args, message", [
    (["--prompts-per-group", "1"], "Error: --prompts-per-group 1: must be a whole number of at least 2"),
    (["--prompts-per-group", "abc"], "Error: Invalid value for '--prompts-per-group': 'abc' is not a valid integer"),
    (["--icc", "-0.1"], "Error: --icc -0.1: must be from 0 to 1"),
    (["--icc", "nan"], "Error: --icc nan: must be a finite number"),
    (["--unit", "x"], "Error: Invalid value for '--unit': 'x' is not one of 'prompt', 'sample'"),
])
def test_plan_refuses_bad_two_level_options_in_one_line(capsys, args, message):
    with pytest.raises(SystemExit) as caught:  # main() exits 2 on bad input, with one line on stderr
        main(["plan", "sheng2019", "--mde", "10", *args])
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert caught.value.code == 2 and len(lines) == 1 and lines[0].startswith(message), err
    assert "Traceback" not in out + err
