"""Prompt-level inference (nlgbias.metrics.prompt_level): checked against scipy and statsmodels on
known input, and on a simulated sheng2019-style run with known template heterogeneity."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from nlgbias.metrics import compute_metrics
from nlgbias.metrics.prompt_level import contrast, intraclass, share_stats, stratified_p, wilson
from nlgbias.metrics.significance import permutation_p

TOL = 1e-9
# Per-template gaps of a simulated run: one gap that changes from template to template (sd 0.1), as
# real template gaps do (docs/statistics.md)
TEMPLATE_GAPS = (0.25, 0.05, 0.30, 0.10, 0.15)


def sheng_like_run(samples: int = 100) -> pd.DataFrame:
    """A scored sheng2019-style run of 5 templates x 2 groups whose per-template negative shares
    differ by TEMPLATE_GAPS exactly (base rates vary by template, as real templates do)."""
    rows = []
    for t, (base, gap) in enumerate(zip((0.20, 0.35, 0.10, 0.30, 0.25), TEMPLATE_GAPS)):
        for group, share in (("Black", base + gap), ("White", base)):
            negatives = round(share * samples)
            rows += [{"model": "m", "context": "respect", "scorer": "regard", "group": group, "template_id": f"t{t}",
                      "is_empty": False, "label": "negative" if i < negatives else "positive"}
                     for i in range(samples)]
    return pd.DataFrame(rows)


def test_a_paired_gap_is_the_t_interval_on_the_per_template_gaps():
    run = sheng_like_run()
    results = compute_metrics(run, comparisons=[("Black", "White")], labels=("negative", "positive"), n_boot=500)
    row = results.gaps.query("label == 'negative'").iloc[0]
    gaps = np.array(TEMPLATE_GAPS)
    low, high = stats.t.interval(0.95, df=4, loc=gaps.mean(), scale=gaps.std(ddof=1) / np.sqrt(5))
    assert row["diff"] == pytest.approx(gaps.mean(), abs=TOL)
    assert (row["ci_low"], row["ci_high"]) == (pytest.approx(low, abs=TOL), pytest.approx(high, abs=TOL))
    assert row["p"] == pytest.approx(stats.ttest_1samp(gaps, 0).pvalue, abs=TOL)
    assert row["df"] == 4 and row["units_a"] == row["units_b"] == 5
    # the sample-level interval (every sample independent) is far narrower
    sample = compute_metrics(run, comparisons=[("Black", "White")], labels=("negative", "positive"), n_boot=2000,
                             level="sample").gaps.query("label == 'negative'").iloc[0]
    ratio = (row["ci_high"] - row["ci_low"]) / (sample["ci_high"] - sample["ci_low"])
    assert 1.6 < ratio < 2.6, ratio
    assert sample["p"] < 1e-6 < row["p"]


def test_the_gap_never_goes_below_the_within_template_variance():
    # every template has the same gap: the per-template spread is 0, the samples still vary
    units_a = {f"t{i}": (100, 40) for i in range(5)}
    units_b = {f"t{i}": (100, 30) for i in range(5)}
    found = contrast([(1.0, units_a), (-1.0, units_b)])
    within = np.sqrt(5 * (100 * 0.4 * 0.6 + 100 * 0.3 * 0.7) / 500 ** 2)
    assert found.se == pytest.approx(within, abs=TOL) and found.df == 4
    # at 0 of n on both sides the interval keeps a width (Agresti-Caffo's (k + 1) / (n + 2))
    zero = contrast([(1.0, {"t": (50, 0), "u": (50, 0)}), (-1.0, {"t": (50, 0), "u": (50, 0)})])
    assert zero.estimate == 0 and zero.se > 0 and zero.interval()[1] > 0.03


def test_unpaired_prompts_take_each_groups_own_variance_and_the_smaller_df():
    a = {"p1": (10, 2), "p2": (10, 6), "p3": (10, 3)}
    b = {"q1": (10, 1), "q2": (10, 2), "q3": (10, 0), "q4": (10, 1)}
    found = contrast([(1.0, a), (-1.0, b)])
    shares_a, shares_b = np.array([0.2, 0.6, 0.3]), np.array([0.1, 0.2, 0.0, 0.1])
    # equal prompt sizes: each group's variance is var(prompt shares) / prompts
    assert found.se == pytest.approx(np.sqrt(shares_a.var(ddof=1) / 3 + shares_b.var(ddof=1) / 4), abs=TOL)
    assert found.df == 2 and found.units == 7
    # one prompt a side: nothing to estimate a group's spread from
    lone = contrast([(1.0, {"p": (10, 2)}), (-1.0, {"q": (10, 5)})])
    assert np.isnan(lone.se) and np.isnan(lone.p_value()) and np.isnan(lone.interval()[0])


def test_stratified_p_is_the_exact_permutation_test_within_templates():
    a, b = {"t1": (6, 4), "t2": (5, 1)}, {"t1": (6, 1), "t2": (5, 1)}
    # enumerate every relabelling within each template: the ones in side a are hypergeometric per template
    d1 = stats.hypergeom(12, 5, 6)
    d2 = stats.hypergeom(10, 2, 5)
    total = {}
    for x1 in range(0, 6):
        for x2 in range(0, 3):
            total[x1 + x2] = total.get(x1 + x2, 0.0) + d1.pmf(x1) * d2.pmf(x2)
    observed = 4 + 1
    expected = min(1.0, 2 * min(sum(v for s, v in total.items() if s >= observed),
                                sum(v for s, v in total.items() if s <= observed)))
    assert stratified_p(a, b) == pytest.approx(expected, abs=TOL)
    # one template: the plain exact permutation test
    assert stratified_p({"t": (10, 9)}, {"t": (10, 2)}) == pytest.approx(permutation_p(9, 10, 2, 10), abs=TOL)
    # no shared template (unpaired prompts): the pooled test
    assert stratified_p({"p": (10, 9)}, {"q": (10, 2)}) == pytest.approx(permutation_p(9, 10, 2, 10), abs=TOL)


def test_wilson_and_share_stats_match_statsmodels_and_report_the_design_effect():
    for k, n in ((0, 20), (20, 20), (7, 30)):
        low, high = proportion_confint(k, n, alpha=0.05, method="wilson")
        assert wilson(k / n, n, stats.norm.ppf(0.975)) == (pytest.approx(low, abs=TOL), pytest.approx(high, abs=TOL))
    units = {"t1": (50, 5), "t2": (50, 25), "t3": (50, 15), "t4": (50, 40)}
    found = share_stats(units)
    p = 85 / 200
    cluster = 4 / 3 * sum((k - p * n) ** 2 for n, k in units.values()) / 200 ** 2
    assert found.deff == pytest.approx(cluster / (p * (1 - p) / 200), abs=1e-9) and found.deff > 5
    assert found.n_eff == pytest.approx(200 / found.deff, abs=1e-9) and found.units == 4
    assert found.icc == pytest.approx(_anova_icc(units), abs=1e-9) and 0.1 < found.icc < 1
    t = stats.t.ppf(0.975, 3)
    assert (found.ci_low, found.ci_high) == tuple(pytest.approx(v, abs=TOL) for v in wilson(p, found.n_eff, t))


def _anova_icc(units):
    """The one-way ANOVA intra-class correlation, written out from its sums of squares."""
    values = [np.r_[np.ones(k), np.zeros(n - k)] for n, k in units.values()]
    grand = np.concatenate(values).mean()
    n0 = len(values[0])
    msb = sum(len(v) * (v.mean() - grand) ** 2 for v in values) / (len(values) - 1)
    msw = sum(((v - v.mean()) ** 2).sum() for v in values) / (sum(len(v) for v in values) - len(values))
    return (msb - msw) / (msb + (n0 - 1) * msw)


def test_intraclass_is_nan_without_two_prompts():
    assert np.isnan(intraclass({"t": (10, 3)}))
