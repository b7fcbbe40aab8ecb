"""One home for resampling: per-cell generators, bootstrap draws and intervals, permutation tests.

Every confidence interval of nlgbias comes from here (the pattern of fairlearn's private
``_bootstrap`` module): a cell's replicates are drawn from a generator seeded by the run seed
and the cell's key (:func:`cell_rng`), so a cell's interval does not depend on which other
cells a table holds; the interval is the percentile (or, where a metric asks, basic) interval of
the replicates.  :func:`permutation_test` is the one call of ``scipy.stats.permutation_test``,
and :func:`require_columns` the one check of a table's columns.

>>> rng = cell_rng(0, "model", "group")
>>> low, high = percentile_interval(bootstrap_means(np.array([0.0, 1.0, 1.0]), 200, rng), 0.9)
>>> bool(0 <= low <= high <= 1)
True
"""

from __future__ import annotations

from typing import Iterable

import numpy as np
import pandas as pd
from scipy import stats

from nlgbias.errors import InputError
from nlgbias.keys import cell_seed

MISSING_COLUMN = "{where}: column {column!r} missing from the {table} table; got {got}"


def require_columns(table: pd.DataFrame, columns: Iterable[str], where: str, name: str) -> None:
    """Raise :class:`InputError` naming the first of ``columns`` that ``table`` (called ``name``) lacks."""
    for column in columns:
        if column not in table.columns:
            raise InputError(MISSING_COLUMN.format(where=where, column=column, table=name,
                                                   got=", ".join(map(str, table.columns)) or "no columns"))


def cell_rng(seed: int, *key) -> np.random.Generator:
    """The generator of one resampling cell: seeded by the run seed and the cell's key."""
    return np.random.default_rng(cell_seed(seed, *key))


def percentile_interval(replicates, confidence: float, axis=None, *, skip_nan: bool = False):
    """``(low, high)``: the two-sided percentile interval of bootstrap ``replicates`` (NaNs left out
    with ``skip_nan``)."""
    alpha = (1 - confidence) / 2
    return (np.nanquantile if skip_nan else np.quantile)(replicates, [alpha, 1 - alpha], axis=axis)


def bootstrap_indices(rng: np.random.Generator, n: int, n_boot: int) -> np.ndarray:
    """``(n_boot, n)`` row indices, each row a resample with replacement of ``range(n)``."""
    return rng.integers(0, n, size=(n_boot, n))


def bootstrap_means(x: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Means of ``n_boot`` resamples of ``x`` (with replacement), in chunks to bound memory.

    ``x`` is sorted first, so the result does not depend on row order.
    """
    x = np.sort(np.asarray(x, dtype=np.float64))
    n = len(x)
    out = np.empty(n_boot)
    chunk = max(1, 4_000_000 // max(n, 1))
    for start in range(0, n_boot, chunk):
        stop = min(n_boot, start + chunk)
        out[start:stop] = x[bootstrap_indices(rng, n, stop - start)].mean(axis=1)
    return out


def mean_difference(x, y, axis=-1):
    """Statistic of the two-sample permutation tests: ``mean(x) - mean(y)``."""
    return np.mean(x, axis=axis) - np.mean(y, axis=axis)


def permutation_test(data, statistic=mean_difference, *, seed: int, **options):
    """``scipy.stats.permutation_test(data, statistic, vectorized=True, ...)`` seeded by ``seed``.

    scipy renamed the generator argument ``random_state`` to ``rng`` (1.15); the pinned lower
    bound of scipy has ``rng``, and this is the one place that passes it.
    """
    return stats.permutation_test(data, statistic, vectorized=True, rng=np.random.default_rng(seed), **options)


__all__ = ["MISSING_COLUMN", "bootstrap_indices", "bootstrap_means", "cell_rng", "mean_difference",
           "percentile_interval", "permutation_test", "require_columns"]
