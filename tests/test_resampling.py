"""The one resampling module: seeded cells, bootstrap draws, intervals, permutation tests, column checks."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from nlgbias.errors import InputError
from nlgbias.keys import cell_seed
from nlgbias.metrics.resampling import (bootstrap_indices, bootstrap_means, cell_rng, percentile_interval,
                                        permutation_test, require_columns)


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
