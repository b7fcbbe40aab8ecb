"""Statistics against scipy/statsmodels on known data, and invariances every metric must keep."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.proportion import proportion_confint
from scipy import stats
from statsmodels.stats.multitest import multipletests

from nlgbias.errors import InputError
from nlgbias.metrics import Results, compute_metrics, differences, fdr_bh, group_shares, permutation_p

LABELS = ["negative", "neutral", "positive"]


def scored_table(counts: dict[str, tuple[int, int, int]], model="m", context="c", scorer="s") -> pd.DataFrame:
    """Rows for each group with the given (negative, neutral, positive) counts."""
    rows = []
    for group, per_label in counts.items():
        for label, k in zip(LABELS, per_label):
            rows += [{"model": model, "context": context, "scorer": scorer, "group": group, "label": label,
                      "is_empty": False}] * k
    return pd.DataFrame(rows)


# --- against reference implementations ---------------------------------------------------

def test_bootstrap_ci_matches_scipy_percentile_bootstrap():
    table = scored_table({"a": (37, 80, 83)})
    ours = group_shares(table, labels=LABELS, n_boot=20000, seed=1).set_index("label")
    for label in LABELS:
        x = (table["label"] == label).to_numpy(float)
        ref = stats.bootstrap((x,), np.mean, method="percentile", n_resamples=20000, rng=2,
                              confidence_level=0.95).confidence_interval
        assert ours.at[label, "share"] == pytest.approx(x.mean())
        assert ours.at[label, "ci_low"] == pytest.approx(ref.low, abs=0.006)
        assert ours.at[label, "ci_high"] == pytest.approx(ref.high, abs=0.006)


def test_difference_ci_matches_scipy_two_sample_bootstrap():
    table = scored_table({"a": (30, 50, 20), "b": (12, 60, 28)})
    shares = group_shares(table, labels=LABELS, seed=0)
    ours = differences(shares, column="group", pairs=[("a", "b")], within=["model", "context", "scorer"],
                       labels=["negative"], n_boot=20000, seed=3).iloc[0]
    xa = (table.loc[table.group == "a", "label"] == "negative").to_numpy(float)
    xb = (table.loc[table.group == "b", "label"] == "negative").to_numpy(float)
    ref = stats.bootstrap((xa, xb), lambda x, y, axis=-1: x.mean(axis=axis) - y.mean(axis=axis),
                          method="percentile", n_resamples=20000, rng=4).confidence_interval
    assert ours["diff"] == pytest.approx(0.18)
    assert ours["ci_low"] == pytest.approx(ref.low, abs=0.01)
    assert ours["ci_high"] == pytest.approx(ref.high, abs=0.01)


@pytest.mark.parametrize("k_a, n_a, k_b, n_b", [(9, 10, 2, 10), (3, 8, 3, 9), (0, 7, 4, 6), (5, 5, 0, 4), (2, 9, 2, 9)])
def test_permutation_p_equals_scipys_exact_permutation_test(k_a, n_a, k_b, n_b):
    a = np.r_[np.ones(k_a), np.zeros(n_a - k_a)]
    b = np.r_[np.ones(k_b), np.zeros(n_b - k_b)]
    ref = stats.permutation_test((a, b), lambda x, y, axis: x.mean(axis=axis) - y.mean(axis=axis),
                                 permutation_type="independent", n_resamples=np.inf, vectorized=True)
    assert permutation_p(k_a, n_a, k_b, n_b) == pytest.approx(ref.pvalue, rel=1e-9)


def test_permutation_p_large_sample_agrees_with_monte_carlo():
    a = np.r_[np.ones(60), np.zeros(440)]
    b = np.r_[np.ones(85), np.zeros(415)]
    ref = stats.permutation_test((a, b), lambda x, y, axis: x.mean(axis=axis) - y.mean(axis=axis),
                                 permutation_type="independent", n_resamples=40000, vectorized=True, rng=0)
    assert permutation_p(60, 500, 85, 500) == pytest.approx(ref.pvalue, abs=0.005)


def test_fdr_bh_matches_statsmodels():
    rng = np.random.default_rng(7)
    p = np.r_[rng.uniform(0, 0.01, 5), rng.uniform(0, 1, 40), [1.0, 0.05, 0.05]]
    expected = multipletests(p, method="fdr_bh")[1]
    np.testing.assert_allclose(fdr_bh(p), expected, rtol=1e-12)
    with_nan = fdr_bh(np.r_[p[:3], np.nan])
    np.testing.assert_allclose(with_nan[:3], multipletests(p[:3], method="fdr_bh")[1])
    assert np.isnan(with_nan[3])


# --- values computed independently, group by group ---------------------------------------

def test_group_shares_counts_each_group_independently():
    table = scored_table({"a": (1, 2, 7), "b": (5, 5, 0)})
    out = group_shares(table, labels=LABELS, min_n=10)
    for group in ("a", "b"):
        mask = table["group"] == group
        for label in LABELS:
            row = out[(out.group == group) & (out.label == label)].iloc[0]
            assert row["n"] == mask.sum()
            assert row["k"] == ((table["label"] == label) & mask).sum()
            assert row["share"] == pytest.approx(row["k"] / row["n"])
            assert row["ci_low"] <= row["share"] <= row["ci_high"]
    assert not out["small_n"].any()
    assert group_shares(table, labels=LABELS, min_n=11)["small_n"].all()
    b_positive = out[(out.group == "b") & (out.label == "positive")].iloc[0]
    # 0 of 10: Wilson's interval (statsmodels), not the bootstrap's zero width
    low, high = proportion_confint(0, 10, alpha=0.05, method="wilson")
    assert b_positive["k"] == 0 and b_positive["ci_low"] == pytest.approx(low, abs=1e-9)
    assert b_positive["ci_high"] == pytest.approx(high, abs=1e-9) and high > 0.2


def test_compute_metrics_adjusts_over_all_comparisons_of_a_run():
    one = scored_table({"man": (50, 30, 20), "woman": (20, 30, 50), "gay": (10, 80, 10), "straight": (12, 78, 10)})
    two = scored_table({"man": (30, 40, 30), "woman": (28, 42, 30), "gay": (11, 79, 10), "straight": (10, 80, 10)}, model="m2")
    results = compute_metrics(pd.concat([one, two]), comparisons=[("man", "woman"), ("gay", "straight")], n_boot=500)
    assert len(results.gaps) == 2 * 2 * 2          # models x pairs x (negative, positive)
    assert len(results.model_gaps) == 4 * 2         # groups x labels
    all_p = np.r_[results.gaps["p"], results.model_gaps["p"]]
    np.testing.assert_allclose(np.r_[results.gaps["p_adj"], results.model_gaps["p_adj"]],
                               multipletests(all_p, method="fdr_bh")[1])
    top = results.gaps[(results.gaps.model == "m") & (results.gaps.group_a == "man") & (results.gaps.label == "negative")].iloc[0]
    assert top["diff"] == pytest.approx(0.30)
    assert top["p"] == pytest.approx(permutation_p(50, 100, 20, 100))
    assert results.meta["n_comparisons"] == 16


def test_results_round_trip_exactly(tmp_path):
    table = scored_table({"man": (5, 3, 2), "woman": (2, 3, 5)})
    results = compute_metrics(table, comparisons=[("man", "woman")], n_boot=200, min_n=5)
    results.write(tmp_path)
    back = Results.read(tmp_path)
    for name in ("shares", "gaps", "model_gaps"):
        pd.testing.assert_frame_equal(getattr(back, name), getattr(results, name), check_dtype=False, check_exact=True)
    assert back.meta == results.meta
    assert (tmp_path / "gaps.csv").read_text().splitlines()[0].startswith("model,context,scorer,label,group_a,group_b")


# --- properties every metric keeps -------------------------------------------------------

def base_table():
    return scored_table({"a": (20, 50, 30), "b": (35, 40, 25), "c": (5, 10, 15)})


def shares_of(table, **kw):
    return group_shares(table, labels=LABELS, n_boot=400, seed=11, **kw)


def gaps_of(table):
    return differences(shares_of(table), column="group", pairs=[("a", "b"), ("b", "c")],
                       within=["model", "context", "scorer"], n_boot=400, seed=11)


@pytest.mark.parametrize("metric", [shares_of, gaps_of])
def test_row_order_changes_nothing(metric):
    table = base_table()
    shuffled = table.sample(frac=1, random_state=3).reset_index(drop=True)
    pd.testing.assert_frame_equal(metric(table).sort_values(list(metric(table).columns[:6])).reset_index(drop=True),
                                  metric(shuffled).sort_values(list(metric(table).columns[:6])).reset_index(drop=True))


def test_renaming_a_group_only_renames_rows():
    table = base_table()
    renamed = table.assign(group=table["group"].replace({"c": "zeta"}))
    before, after = shares_of(table), shares_of(renamed)
    assert list(after["group"]) == [g if g != "c" else "zeta" for g in before["group"]]
    cols = ["label", "n", "k", "share"]
    pd.testing.assert_frame_equal(before[cols], after[cols])


def test_duplicating_rows_keeps_shares_and_narrows_cis():
    table = base_table()
    before, after = shares_of(table), shares_of(pd.concat([table, table]))
    np.testing.assert_allclose(before["share"], after["share"])
    inner = (before["k"] > 0) & (before["k"] < before["n"])
    assert ((after["ci_high"] - after["ci_low"])[inner] < (before["ci_high"] - before["ci_low"])[inner]).all()
    assert (after["n"] == 2 * before["n"]).all()


def test_same_seed_same_ci_other_seed_other_ci():
    table = base_table()
    pd.testing.assert_frame_equal(shares_of(table), shares_of(table))
    other = group_shares(table, labels=LABELS, n_boot=400, seed=12)
    assert not np.allclose(shares_of(table)["ci_low"], other["ci_low"])


def test_missing_column_is_reported():
    with pytest.raises(InputError, match="group_shares: column 'group' missing from the scored table; got model, label"):
        group_shares(pd.DataFrame({"model": ["m"], "label": ["positive"]}), by=["model", "group"])


def test_prompt_level_results_do_not_depend_on_row_order():
    rng = np.random.default_rng(3)
    rows = [{"model": "m", "context": "c", "scorer": "s", "group": g, "template_id": f"t{t}", "is_empty": False,
             "label": "negative" if rng.random() < (0.2 + 0.1 * t) else "positive"}
            for g in ("a", "b") for t in range(6) for _ in range(25)]
    scored = pd.DataFrame(rows)
    first = compute_metrics(scored, comparisons=[("a", "b")], n_boot=200)
    again = compute_metrics(scored.sample(frac=1, random_state=1).reset_index(drop=True), comparisons=[("a", "b")],
                            n_boot=200)
    for name, key in (("shares", ["group", "label"]), ("gaps", ["label"])):  # bit for bit, not within a tolerance
        ordered = [t.table(name).sort_values(key).reset_index(drop=True) for t in (first, again)]
        pd.testing.assert_frame_equal(*ordered, check_exact=True)
