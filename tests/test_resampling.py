"""The one resampling module: seeded cells, bootstrap draws, intervals, permutation tests, column checks."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from nlgbias.errors import InputError
from nlgbias.keys import cell_seed
from nlgbias.metrics import resampling
from nlgbias.metrics.resampling import (Binomial, Difference, Means, Multinomial, Table, bootstrap, bootstrap_indices,
                                        bootstrap_means, cell_rng, percentile_interval, permutation_test,
                                        require_columns)


def test_a_cell_draws_the_same_replicates_whatever_else_was_drawn():
    first = bootstrap_indices(cell_rng(3, "m", "g"), 5, 10)
    cell_rng(3, "other").random(100)
    again = bootstrap_indices(cell_rng(3, "m", "g"), 5, 10)
    assert np.array_equal(first, again)
    assert not np.array_equal(first, bootstrap_indices(cell_rng(4, "m", "g"), 5, 10))
    assert cell_seed(3, "m", 1) == cell_seed(3, "m", "1")


def test_bootstrap_means_ignore_row_order_and_chunking_and_match_direct_draws():
    x = np.array([0.3, -1.0, 2.5, 0.0, 0.7])
    a = bootstrap_means(x, 500, np.random.default_rng(1))
    b = bootstrap_means(x[::-1], 500, np.random.default_rng(1))
    direct = np.sort(x)[np.random.default_rng(1).integers(0, 5, size=(500, 5))].mean(axis=1)
    assert np.array_equal(a, b) and np.allclose(a, direct)


def test_percentile_interval_equals_numpy_quantiles_and_skips_nans_on_request():
    boot = np.arange(101, dtype=float)
    assert list(percentile_interval(boot, 0.9)) == pytest.approx([5.0, 95.0])
    with_nan = np.append(boot, np.nan)
    assert np.isnan(percentile_interval(with_nan, 0.9)).all()
    assert list(percentile_interval(with_nan, 0.9, skip_nan=True)) == pytest.approx([5.0, 95.0])


# --- the bootstrap driver ------------------------------------------------------------------------
# scipy.stats.bootstrap draws its resamples as ``rng.integers(0, n, (n_resamples, n))``, sample by
# sample, as the driver does: on sorted data and with generators seeded alike both see the same
# replicates, so scipy's percentile and basic intervals are the reference up to rounding.

X = np.sort(np.random.default_rng(1).normal(size=25))
Y = np.sort(np.random.default_rng(2).normal(0.5, 2.0, size=31))


@pytest.mark.parametrize("method", ["percentile", "basic"])
def test_means_and_mean_difference_intervals_are_scipys(method):
    ours = bootstrap(Means(X), rng=np.random.default_rng(4), n_boot=999, confidence=0.9, method=method)
    theirs = stats.bootstrap((X,), np.mean, n_resamples=999, confidence_level=0.9, method=method,
                             rng=np.random.default_rng(4))
    np.testing.assert_allclose(ours.replicates, theirs.bootstrap_distribution, rtol=0, atol=1e-12)
    assert (ours.low, ours.high) == pytest.approx(tuple(theirs.confidence_interval), abs=1e-12)
    assert ours.estimate == pytest.approx(X.mean(), abs=1e-15)

    ours = bootstrap(Difference(Means(X), Means(Y)), rng=np.random.default_rng(4), n_boot=999, confidence=0.9,
                     method=method)
    theirs = stats.bootstrap((X, Y), lambda a, b, axis: a.mean(axis=axis) - b.mean(axis=axis), n_resamples=999,
                             confidence_level=0.9, method=method, rng=np.random.default_rng(4))
    assert (ours.low, ours.high) == pytest.approx(tuple(theirs.confidence_interval), abs=1e-12)
    assert ours.estimate == pytest.approx(X.mean() - Y.mean(), abs=1e-15)


@pytest.mark.parametrize("method", ["percentile", "basic"])
def test_a_table_statistic_batched_or_row_by_row_is_scipys(method):
    theirs = stats.bootstrap((X,), np.median, n_resamples=500, confidence_level=0.95, method=method,
                             rng=np.random.default_rng(9))
    batched = bootstrap(Table(len(X), lambda idx: np.median(X[idx], axis=-1), vectorized=True),
                        rng=np.random.default_rng(9), n_boot=500, method=method)
    one_by_one = bootstrap(Table(len(X), lambda idx: float(np.median(X[idx]))), rng=np.random.default_rng(9),
                           n_boot=500, method=method)
    assert np.array_equal(batched.replicates, one_by_one.replicates)
    assert (batched.low, batched.high) == pytest.approx(tuple(theirs.confidence_interval), abs=1e-12)
    assert batched.estimate == np.median(X)


def test_a_vector_statistic_gets_an_interval_per_component_and_batches_change_nothing(monkeypatch):
    def both(idx):
        return np.stack([X[idx].mean(axis=-1), X[idx].max(axis=-1)], axis=-1)

    whole = bootstrap(Table(len(X), both, vectorized=True), rng=np.random.default_rng(3), n_boot=301)
    monkeypatch.setattr(resampling, "CHUNK", 7 * len(X))  # batches of 7 replicates, the last one short
    batched = bootstrap(Table(len(X), both, vectorized=True), rng=np.random.default_rng(3), n_boot=301)
    assert np.array_equal(whole.replicates, batched.replicates) and whole.replicates.shape == (301, 2)
    for j in range(2):
        assert [whole.low[j], whole.high[j]] == pytest.approx(list(np.quantile(whole.replicates[:, j], [0.025, 0.975])))


def test_basic_interval_reflects_the_percentile_one_and_is_clipped_to_bounds():
    kind = Means(np.array([0.0] * 18 + [1.0] * 2))  # estimate 0.1, replicates skewed right
    pct = bootstrap(kind, rng=cell_rng(0, "c"), n_boot=2000)
    basic = bootstrap(kind, rng=cell_rng(0, "c"), n_boot=2000, method="basic")
    assert (basic.low, basic.high) == pytest.approx((0.2 - pct.high, 0.2 - pct.low))
    assert basic.low < 0
    clipped = bootstrap(kind, rng=cell_rng(0, "c"), n_boot=2000, method="basic", bounds=(0.0, 1.0))
    assert (clipped.low, clipped.high) == (0.0, basic.high)


def test_no_replicates_give_nan_bounds_and_a_bad_method_is_refused():
    out = bootstrap(Multinomial(10, np.array([0.2, 0.8])), rng=cell_rng(0), n_boot=0)
    assert np.isnan(out.low).all() and np.isnan(out.high).all() and out.low.shape == (2,)
    assert out.replicates.shape == (0, 2)
    assert np.isnan(bootstrap(Means(X), rng=cell_rng(0), n_boot=0).high)
    with pytest.raises(ValueError, match="method must be one of percentile, basic; got 'bca'"):
        bootstrap(Means(X), rng=cell_rng(0), n_boot=10, method="bca")  # type: ignore[arg-type]


def test_nan_replicates_are_skipped_on_request():
    kind = Table(4, lambda idx: np.nan if (idx == 0).all() else float(np.mean(idx)))
    kept = bootstrap(kind, rng=cell_rng(1), n_boot=4000)
    skipped = bootstrap(kind, rng=cell_rng(1), n_boot=4000, skip_nan=True)
    assert np.isnan(kept.replicates).sum() > 0  # all four rows are row 0 in 1/256 of replicates
    assert np.isnan(kept.low) and np.isfinite(skipped.low)


# Binomial and multinomial replicates against their distributions: 20,000 replicates, means to
# within 5 standard errors, variances to within 6% (the sd of a variance estimate is about
# sqrt(2 / n_boot) = 1% relative).

N_BOOT = 20_000


def test_binomial_replicates_have_the_binomial_mean_and_variance():
    reps = bootstrap(Binomial(40, 0.3), rng=cell_rng(0, "binomial"), n_boot=N_BOOT).replicates
    var = 0.3 * 0.7 / 40
    assert reps.mean() == pytest.approx(0.3, abs=5 * np.sqrt(var / N_BOOT))
    assert reps.var() == pytest.approx(var, rel=0.06)
    assert set(np.unique(reps * 40)) <= set(range(41))

    n, p, w = np.array([30, 50, 20, 60]), np.array([0.2, 0.5, 0.6, 0.1]), (1, -1, -1, 1)
    kind = Binomial(n, p, weights=w)
    assert kind.estimate() == pytest.approx(0.2 - 0.5 - 0.6 + 0.1)
    reps = bootstrap(kind, rng=cell_rng(0, "gap"), n_boot=N_BOOT).replicates
    var = float(np.sum(p * (1 - p) / n))  # independent cells, weights of +-1
    assert reps.shape == (N_BOOT,)
    assert reps.mean() == pytest.approx(kind.estimate(), abs=5 * np.sqrt(var / N_BOOT))
    assert reps.var() == pytest.approx(var, rel=0.06)


def test_share_difference_replicates_have_the_variance_of_two_independent_binomials():
    kind = Difference(Binomial(50, 0.4), Binomial(80, 0.25))
    reps = bootstrap(kind, rng=cell_rng(0, "diff"), n_boot=N_BOOT).replicates
    var = 0.4 * 0.6 / 50 + 0.25 * 0.75 / 80
    assert kind.estimate() == pytest.approx(0.15)
    assert reps.mean() == pytest.approx(0.15, abs=5 * np.sqrt(var / N_BOOT))
    assert reps.var() == pytest.approx(var, rel=0.06)


def test_multinomial_replicates_have_the_multinomial_means_and_covariance():
    p = np.array([0.5, 0.3, 0.2])
    out = bootstrap(Multinomial(60, p), rng=cell_rng(0, "multinomial"), n_boot=N_BOOT)
    np.testing.assert_allclose(out.replicates.sum(axis=1), 1.0, rtol=0, atol=1e-12)  # one draw of 60 per replicate
    se = np.sqrt(p * (1 - p) / 60 / N_BOOT)
    assert np.all(np.abs(out.replicates.mean(axis=0) - p) < 5 * se)
    cov = (np.diag(p) - np.outer(p, p)) / 60
    np.testing.assert_allclose(np.cov(out.replicates, rowvar=False), cov, rtol=0.06)
    assert out.low.shape == (3,) and np.all(out.low <= p) and np.all(p <= out.high)


def test_permutation_test_is_scipys_with_the_same_generator():
    a, b = np.array([0.1, 0.4, 0.35, 0.8]), np.array([0.9, 1.2, 0.7, 1.5, 1.1])
    ours = permutation_test((a, b), seed=7, n_resamples=999)
    theirs = stats.permutation_test((a, b), lambda x, y, axis: x.mean(axis=axis) - y.mean(axis=axis),
                                    vectorized=True, n_resamples=999, rng=np.random.default_rng(7))
    assert ours.pvalue == theirs.pvalue and ours.statistic == pytest.approx(a.mean() - b.mean())


def test_require_columns_names_the_table_and_what_it_has():
    with pytest.raises(InputError) as caught:
        require_columns(pd.DataFrame({"x": [1]}), ["x", "y"], "where", "jobs")
    assert str(caught.value) == "where: column 'y' missing from the jobs table; got x"
    with pytest.raises(InputError, match="got no columns"):
        require_columns(pd.DataFrame(), ["y"], "where", "jobs")
