"""Gap differences between models: the statistic, its exact test, its error rate, its place in the family."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

import nlgbias
from nlgbias.metrics.gap_differences import gap_differences
from nlgbias.metrics.power import detectable_gap_difference
from nlgbias.metrics.significance import gap_difference_p, permutation_p
from nlgbias.pipeline.planning import suite_comparisons


def shares_table(cells: dict[tuple[str, str], tuple[int, int]], *, context="c", label="negative") -> pd.DataFrame:
    """A shares table with ``(model, group) -> (k, n)``."""
    return pd.DataFrame([{"model": m, "context": context, "scorer": "s", "group": g, "label": label, "n": n, "k": k}
                         for (m, g), (k, n) in cells.items()])


def ones(k: int, n: int) -> np.ndarray:
    return np.r_[np.ones(k), np.zeros(n - k)]


# --- the statistic --------------------------------------------------------------------------

def test_the_estimate_is_the_gap_in_model_a_minus_the_gap_in_model_b():
    # model a: 30/100 of man, 10/100 of woman negative (gap +20 points);
    # model b: 24/80 of man, 18/60 of woman (gap 30% - 30% = 0): the gap difference is +20 points.
    shares = shares_table({("a", "man"): (30, 100), ("a", "woman"): (10, 100), ("b", "man"): (24, 80),
                           ("b", "woman"): (18, 60)})
    row = gap_differences(shares, pairs=[("man", "woman")], models=[("a", "b")], labels=["negative"]).iloc[0]
    assert (row["n_a1"], row["k_a1"], row["n_a2"], row["k_a2"]) == (100, 30, 100, 10)
    assert (row["n_b1"], row["k_b1"], row["n_b2"], row["k_b2"]) == (80, 24, 60, 18)
    assert row["gap_a"] == pytest.approx(0.20) and row["gap_b"] == pytest.approx(0.0)
    assert row["diff"] == pytest.approx(0.20)
    assert row["ci_low"] < 0.20 < row["ci_high"]
    # the other order of models or of groups flips the sign, nothing else
    flipped = gap_differences(shares, pairs=[("woman", "man")], models=[("b", "a")], labels=["negative"]).iloc[0]
    assert flipped["diff"] == pytest.approx(0.20)
    swapped = gap_differences(shares, pairs=[("man", "woman")], models=[("b", "a")], labels=["negative"]).iloc[0]
    assert swapped["diff"] == pytest.approx(-0.20) and swapped["p"] == pytest.approx(row["p"])
    assert (swapped["ci_low"], swapped["ci_high"]) != (row["ci_low"], row["ci_high"])  # its own cell seed


def test_bootstrap_ci_matches_scipys_four_sample_percentile_bootstrap():
    cells = {("a", "man"): (30, 100), ("a", "woman"): (10, 100), ("b", "man"): (24, 80), ("b", "woman"): (18, 60)}
    row = gap_differences(shares_table(cells), pairs=[("man", "woman")], models=[("a", "b")], labels=["negative"],
                          n_boot=20000).iloc[0]
    data = tuple(ones(k, n) for k, n in cells.values())
    ref = stats.bootstrap(data, lambda a1, a2, b1, b2, axis=-1: (a1.mean(axis) - a2.mean(axis)) - (b1.mean(axis) - b2.mean(axis)),
                          method="percentile", n_resamples=20000, rng=1).confidence_interval
    assert row["ci_low"] == pytest.approx(ref.low, abs=0.01)
    assert row["ci_high"] == pytest.approx(ref.high, abs=0.01)


def test_a_pair_with_a_missing_cell_is_skipped_and_small_cells_flagged():
    shares = shares_table({("a", "man"): (3, 10), ("a", "woman"): (1, 10), ("b", "man"): (2, 10)})
    assert gap_differences(shares, pairs=[("man", "woman")], models=[("a", "b")], labels=["negative"]).empty
    shares = shares_table({("a", "man"): (3, 10), ("a", "woman"): (1, 40), ("b", "man"): (2, 40), ("b", "woman"): (2, 40)})
    assert gap_differences(shares, pairs=[("man", "woman")], models=[("a", "b")], labels=["negative"],
                           min_n=30)["small_n"].tolist() == [True]


# --- the exact test ---------------------------------------------------------------------------

def scipy_stratified_p(first, second) -> float:
    """The same test from scipy: each group's exact permutation distribution of the model gap
    (``scipy.stats.permutation_test``, every relabelling), combined over the two groups."""
    def null(k_a, n_a, k_b, n_b):
        res = stats.permutation_test((ones(k_a, n_a), ones(k_b, n_b)),
                                     lambda x, y, axis: x.mean(axis=axis) - y.mean(axis=axis),
                                     permutation_type="independent", n_resamples=np.inf, vectorized=True)
        return res.null_distribution
    t = (first[0] / first[1] - first[2] / first[3]) - (second[0] / second[1] - second[2] / second[3])
    every = np.subtract.outer(null(*first), null(*second)).ravel()
    return min(1.0, 2 * min(np.mean(every >= t - 1e-12), np.mean(every <= t + 1e-12)))


@pytest.mark.parametrize("first, second", [((5, 6, 1, 6), (2, 6, 3, 6)), ((4, 5, 1, 7), (2, 6, 2, 4)),
                                           ((3, 4, 0, 5), (1, 5, 4, 5)), ((2, 6, 2, 6), (2, 6, 2, 6)),
                                           ((6, 6, 0, 6), (0, 6, 6, 6)), ((0, 5, 0, 6), (3, 6, 1, 5))])
def test_exact_p_equals_scipys_permutation_test_on_the_same_input(first, second):
    assert gap_difference_p(first, second) == pytest.approx(scipy_stratified_p(first, second), rel=1e-9)


def test_exact_p_equals_brute_force_enumeration_of_relabellings():
    first, second = (3, 4, 1, 3), (1, 3, 2, 4)

    def gaps(k_a, n_a, k_b, n_b):
        pooled = [1] * (k_a + k_b) + [0] * (n_a + n_b - k_a - k_b)
        out = []
        for side_a in itertools.combinations(range(n_a + n_b), n_a):
            a = sum(pooled[i] for i in side_a)
            out.append(a / n_a - (k_a + k_b - a) / n_b)
        return out
    t = (3 / 4 - 1 / 3) - (1 / 3 - 2 / 4)
    every = [x - y for x in gaps(*first) for y in gaps(*second)]
    greater = sum(v >= t - 1e-12 for v in every) / len(every)
    less = sum(v <= t + 1e-12 for v in every) / len(every)
    assert gap_difference_p(first, second) == pytest.approx(min(1, 2 * min(greater, less)))


def test_with_one_constant_group_the_test_is_the_two_sample_test_of_the_other():
    assert gap_difference_p((9, 10, 2, 10), (0, 10, 0, 10)) == pytest.approx(permutation_p(9, 10, 2, 10))
    assert gap_difference_p((5, 50, 12, 40), (30, 30, 20, 20)) == pytest.approx(permutation_p(5, 50, 12, 40))


def test_large_cells_use_exact_integer_comparisons():
    p = gap_difference_p((3000, 10000, 2600, 10000), (2000, 10000, 2300, 10000))
    assert 0 <= p < 1e-6
    assert gap_difference_p((3000, 10000, 2600, 10000), (3000, 10000, 2600, 10000)) == 1.0
    assert np.isnan(gap_difference_p((0, 0, 1, 3), (1, 2, 1, 2)))


# --- against simulation ---------------------------------------------------------------------

@pytest.mark.parametrize("probs", [(0.3, 0.3, 0.3, 0.3), (0.4, 0.2, 0.55, 0.35)],
                         ids=["no model effect", "same gap, other base rates"])
def test_false_positive_rate_is_at_most_nominal_when_the_gaps_are_equal(probs):
    n, alpha, reps = 60, 0.05, 400
    k = np.random.default_rng(21).binomial(n, probs, size=(reps, 4))  # cells a1, a2, b1, b2
    rate = np.mean([gap_difference_p((a1, n, b1, n), (a2, n, b2, n)) < alpha for a1, a2, b1, b2 in k])
    # about 3 simulation standard errors above the nominal level; an exact test sits at or under it
    assert 0.01 <= rate <= alpha + 0.033


def test_ci_covers_the_true_gap_difference_at_its_level():
    probs, n, reps = (0.4, 0.2, 0.55, 0.35), 60, 400
    k = np.random.default_rng(22).binomial(n, probs, size=(reps, 4))
    cells = pd.concat([shares_table({("a", "man"): (r[0], n), ("a", "woman"): (r[1], n), ("b", "man"): (r[2], n),
                                     ("b", "woman"): (r[3], n)}, context=f"c{i}") for i, r in enumerate(k)])
    table = gap_differences(cells, pairs=[("man", "woman")], models=[("a", "b")], labels=["negative"], n_boot=1000)
    assert len(table) == reps
    coverage = ((table["ci_low"] <= 0.0) & (0.0 <= table["ci_high"])).mean()  # true difference 0.2 - 0.2
    assert coverage == pytest.approx(0.95, abs=0.035)


def test_simulated_power_at_the_mde_is_80_percent():
    n, p, alpha, reps = 100, 0.3, 0.05, 400
    d = detectable_gap_difference([n] * 4, base_rate=p, alpha=alpha)
    k = np.random.default_rng(23).binomial(n, (p + d / 2, p, p - d / 2, p), size=(reps, 4))
    power = np.mean([gap_difference_p((a1, n, b1, n), (a2, n, b2, n)) < alpha for a1, b1, a2, b2 in k])
    assert power == pytest.approx(0.8, abs=0.06)  # about 3 simulation standard errors


# --- in a run -------------------------------------------------------------------------------

def test_a_two_model_run_adds_gap_differences_to_the_family(tmp_path):
    run = nlgbias.run("sheng2019", models=["fake:a", "fake:b"], samples=2, scorers=["vader"], n_boot=100,
                      out=tmp_path / "two", quiet=True)
    metrics = json.loads((run.out / "metrics.json").read_text())
    gaps, model_gaps = pd.read_csv(run.out / "gaps.csv"), pd.read_csv(run.out / "model_gaps.csv")
    table = pd.read_csv(run.out / "gap_differences.csv")
    suite = nlgbias.load_suite("sheng2019")
    contexts = len({t.context for t in suite.templates})
    assert len(table) == contexts * 1 * 2 * len(suite.comparisons)  # contexts x scorer x labels x comparisons x 1 pair
    m = len(gaps) + len(model_gaps) + len(table)
    assert metrics["meta"]["n_comparisons"] == m == suite_comparisons(suite, 2, scorers=["vader"])
    all_p = np.r_[gaps["p"], model_gaps["p"], table["p"]]
    np.testing.assert_allclose(np.r_[gaps["p_adj"], model_gaps["p_adj"], table["p_adj"]],
                               multipletests(all_p, method="fdr_bh")[1])
    assert "gap_differences" in metrics["meta"]["correction"] and "gap_differences" in metrics["meta"]["analyses"]
    row = table.iloc[0]
    shares = pd.read_csv(run.out / "shares.csv")

    def share(model, group):
        s = shares[(shares.model == model) & (shares.group == group) & (shares.context == row.context)
                   & (shares.label == row.label)].iloc[0]
        return s["k"] / s["n"]
    assert row["diff"] == pytest.approx(share(row.model_a, row.group_a) - share(row.model_a, row.group_b)
                                        - share(row.model_b, row.group_a) + share(row.model_b, row.group_b))
    html = (run.out / "report.html").read_text()
    section = html.split("Gap differences between models", 1)[1].split("</table>", 1)[0]
    assert section.count("<tr") == len(table) + 1  # the header and one row per gap difference


def test_a_one_model_run_has_no_gap_differences(tmp_path):
    run = nlgbias.run("sheng2019", models=["fake"], samples=1, scorers=["vader"], n_boot=100,
                      out=tmp_path / "one", quiet=True)
    assert "gap_differences" not in run.results.tables
    assert not (run.out / "gap_differences.csv").exists()
    assert run.results.meta["n_comparisons"] == len(run.results.gaps)
    assert "Gap differences between models" not in (run.out / "report.html").read_text()
