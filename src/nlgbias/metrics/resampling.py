"""One home for resampling: per-cell generators, the bootstrap driver, permutation tests.

Every confidence interval of nlgbias comes from :func:`bootstrap` (the pattern of fairlearn's
private ``_bootstrap`` module).  A metric describes what one cell resamples with a *replicate
kind*, and the driver draws the replicates and turns them into an interval:

============================  ===========================================================
kind                          one replicate is
============================  ===========================================================
:class:`Means`                the mean of the sample resampled with replacement
:class:`Table`                a statistic of the cell's rows resampled with replacement
:class:`Difference`           one kind's replicate minus another's (each side resampled
                              within itself: a mean difference, a share difference)
:class:`Binomial`             the shares ``Binomial(n, p) / n`` of one or more cells, or a
                              signed sum of them (a difference of gaps)
:class:`Multinomial`          the label shares ``Multinomial(n, p) / n`` of one cell
============================  ===========================================================

A metric with its own resampling scheme (the occupation Gini resamples calls within prompt
groups) passes any object with the two methods of :class:`Replicates`.  The replicates come
from a generator seeded by the run seed and the cell's key (:func:`cell_rng`), so a cell's
interval does not depend on which other cells a table holds.  :class:`Means` resamples its
sample in sorted order, so row order does not change it either; a :class:`Table` resamples rows
as given, and its caller puts them in a canonical order where that matters.  The interval is the
percentile interval of the replicates or, where a metric asks, the basic (reverse-percentile) one.
Replicates are drawn in batches that bound memory; the batches do not change them.

:func:`permutation_test` is the one call of ``scipy.stats.permutation_test``, and
:func:`require_columns` the one check of a table's columns.

>>> result = bootstrap(Means(np.array([0.0, 1.0, 1.0])), rng=cell_rng(0, "model", "group"), n_boot=200,
...                    confidence=0.9)
>>> round(result.estimate, 4), bool(0 <= result.low <= result.high <= 1), result.replicates.shape
(0.6667, True, (200,))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Literal, NamedTuple, Protocol, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from nlgbias.defaults import CONFIDENCE
from nlgbias.errors import InputError
from nlgbias.keys import cell_seed

MISSING_COLUMN = "{where}: column {column!r} missing from the {table} table; got {got}"
METHODS = ("percentile", "basic")
CHUNK = 4_000_000  # index draws per chunk: bounds the memory of a replicate batch, not its values


def require_columns(table: pd.DataFrame, columns: Iterable[str], where: str, name: str) -> None:
    """Raise :class:`InputError` naming the first of ``columns`` that ``table`` (called ``name``) lacks."""
    for column in columns:
        if column not in table.columns:
            raise InputError(MISSING_COLUMN.format(where=where, column=column, table=name,
                                                   got=", ".join(map(str, table.columns)) or "no columns"))


def cell_rng(seed: int, *key) -> np.random.Generator:
    """The generator of one resampling cell: seeded by the run seed and the cell's key."""
    return np.random.default_rng(cell_seed(seed, *key))


# --- replicate kinds ---------------------------------------------------------------------------

class Replicates(Protocol):
    """What one cell resamples: the statistic on the data, and ``n_boot`` replicates of it."""

    def estimate(self) -> Any:
        """The statistic of the data itself: a float, or an array of shape ``shape``."""

    def draw(self, rng: np.random.Generator, n_boot: int) -> np.ndarray:
        """``n_boot`` replicates drawn from ``rng``: an array of shape ``(n_boot, *shape)``."""


def bootstrap_indices(rng: np.random.Generator, n: int, n_boot: int) -> np.ndarray:
    """``(n_boot, n)`` row indices, each row a resample with replacement of ``range(n)``."""
    return rng.integers(0, n, size=(n_boot, n))


def _chunks(n: int, n_boot: int) -> Iterable[tuple[int, int]]:
    """``(start, stop)`` of the replicate batches of a sample of ``n``: about :data:`CHUNK` indices each.

    numpy draws bounded integers one at a time, so batches give the same indices as one draw of
    :func:`bootstrap_indices`.
    """
    step = max(1, CHUNK // max(n, 1))
    for start in range(0, n_boot, step):
        yield start, min(n_boot, start + step)


def bootstrap_means(x: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Means of ``n_boot`` resamples of ``x`` (with replacement), in batches to bound memory.

    ``x`` is sorted first, so the result does not depend on row order.
    """
    x = np.sort(np.asarray(x, dtype=np.float64))
    n = len(x)
    out = np.empty(n_boot)
    for start, stop in _chunks(n, n_boot):
        out[start:stop] = x[bootstrap_indices(rng, n, stop - start)].mean(axis=1)
    return out


@dataclass(frozen=True)
class Means:
    """The mean of a sample; a replicate is the mean of ``len(x)`` draws from it with replacement.

    ``estimate`` is ``x.mean()`` in the order given; the replicates resample ``x`` sorted
    (:func:`bootstrap_means`).
    """

    x: np.ndarray

    def estimate(self) -> float:
        return float(np.mean(self.x)) if len(self.x) else float("nan")

    def draw(self, rng: np.random.Generator, n_boot: int) -> np.ndarray:
        return bootstrap_means(self.x, n_boot, rng)


@dataclass(frozen=True)
class Table:
    """A statistic of a cell's ``n`` rows; a replicate is the statistic of ``n`` rows drawn with replacement.

    ``statistic`` takes row indices: an array of shape ``(n,)`` (the rows themselves are
    ``np.arange(n)``) and returns a float or an array of shape ``shape``.  With ``vectorized``
    it also takes a batch of shape ``(b, n)`` and returns ``(b, *shape)``; otherwise it is
    called once per replicate.  Put the rows in a canonical order before, if row order must not
    matter.
    """

    n: int
    statistic: Callable[[np.ndarray], Any]
    vectorized: bool = False

    def estimate(self) -> Any:
        return self.statistic(np.arange(self.n))

    def draw(self, rng: np.random.Generator, n_boot: int) -> np.ndarray:
        parts = []
        for start, stop in _chunks(self.n, n_boot):
            draws = bootstrap_indices(rng, self.n, stop - start)
            parts.append(np.asarray(self.statistic(draws)) if self.vectorized
                         else np.array([self.statistic(idx) for idx in draws]))
        return np.concatenate(parts) if parts else np.empty(0)


@dataclass(frozen=True)
class Difference:
    """``a - b`` (or ``|a - b|`` with ``absolute``) of two kinds, each side resampled within itself.

    A replicate draws all of side ``a``'s replicates, then side ``b``'s, from one generator.
    """

    a: Replicates
    b: Replicates
    absolute: bool = False

    def estimate(self) -> Any:
        diff = self.a.estimate() - self.b.estimate()
        return abs(diff) if self.absolute else diff

    def draw(self, rng: np.random.Generator, n_boot: int) -> np.ndarray:
        diff = self.a.draw(rng, n_boot) - self.b.draw(rng, n_boot)
        return np.abs(diff) if self.absolute else diff


@dataclass(frozen=True)
class Binomial:
    """The share ``k / n`` of one cell, or of several (``n``, ``p`` arrays); a replicate is
    ``Binomial(n, p) / n`` of each.

    With ``weights`` (one per cell, e.g. ``(1, -1, -1, 1)`` for a difference of two gaps) the
    estimate and each replicate are the weighted sum over cells, added in cell order.  Every
    ``n`` must be positive.
    """

    n: Any
    p: Any
    weights: Sequence[float] | None = None

    def _combine(self, shares: np.ndarray) -> Any:
        if self.weights is None:
            return shares
        total = self.weights[0] * shares[..., 0]
        for j in range(1, len(self.weights)):
            total = total + self.weights[j] * shares[..., j]
        return total

    def estimate(self) -> Any:
        return self._combine(np.asarray(self.p, dtype=float))

    def draw(self, rng: np.random.Generator, n_boot: int) -> np.ndarray:
        n = np.asarray(self.n)
        return self._combine(rng.binomial(self.n, self.p, size=(n_boot, *n.shape)) / n)


@dataclass(frozen=True)
class Multinomial:
    """The label shares ``p`` of one cell of ``n`` samples; a replicate is ``Multinomial(n, p) / n``
    (every label's share, from one draw of the cell's ``n`` samples).  ``n`` must be positive."""

    n: int
    p: np.ndarray

    def estimate(self) -> np.ndarray:
        return np.asarray(self.p, dtype=float)

    def draw(self, rng: np.random.Generator, n_boot: int) -> np.ndarray:
        return rng.multinomial(self.n, self.p, size=n_boot) / self.n


# --- the driver ----------------------------------------------------------------------------------

class Bootstrap(NamedTuple):
    """The result of :func:`bootstrap`: ``estimate``, ``low``, ``high`` (floats, or arrays of the
    statistic's shape) and the ``replicates`` themselves (shape ``(n_boot, *shape)``)."""

    estimate: Any
    low: Any
    high: Any
    replicates: np.ndarray


def percentile_interval(replicates, confidence: float, axis=None, *, skip_nan: bool = False):
    """``(low, high)``: the two-sided percentile interval of bootstrap ``replicates`` (NaNs left out
    with ``skip_nan``)."""
    alpha = (1 - confidence) / 2
    return (np.nanquantile if skip_nan else np.quantile)(replicates, [alpha, 1 - alpha], axis=axis)


def bootstrap(kind: Replicates, *, rng: np.random.Generator, n_boot: int, confidence: float = CONFIDENCE,
              method: Literal["percentile", "basic"] = "percentile",
              bounds: tuple[float, float] = (-np.inf, np.inf), skip_nan: bool = False) -> Bootstrap:
    """Bootstrap one cell: the estimate, ``n_boot`` replicates and a two-sided interval.

    Parameters
    ----------
    kind : Replicates
        What the cell resamples: :class:`Means`, :class:`Table`, :class:`Difference`,
        :class:`Binomial`, :class:`Multinomial`, or a metric's own object with ``estimate()``
        and ``draw(rng, n_boot)``.
    rng : numpy.random.Generator
        The cell's generator, normally ``cell_rng(seed, *key)``; every replicate is drawn from it.
    n_boot : int
        Replicates; 0 gives NaN bounds and no replicates.
    confidence : float, default=0.95
    method : {"percentile", "basic"}, default="percentile"
        ``"percentile"``: the ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles
        ``q_low, q_high`` of the replicates.  ``"basic"`` (reverse percentile):
        ``[2 estimate - q_high, 2 estimate - q_low]``, which corrects for a shift of the
        replicates away from the estimate.
    bounds : (float, float), default=(-inf, inf)
        The range the statistic can take: a basic interval is clipped to it.
    skip_nan : bool, default=False
        Leave NaN replicates out of the quantiles (otherwise a NaN replicate gives NaN bounds).

    Returns
    -------
    Bootstrap
        ``estimate, low, high, replicates``; for a statistic of shape ``shape`` (e.g. one share
        per label) ``low`` and ``high`` have that shape, quantiles taken over replicates.

    Examples
    --------
    >>> out = bootstrap(Difference(Binomial(50, 0.4), Binomial(40, 0.25)), rng=cell_rng(0, "a", "b"), n_boot=500)
    >>> round(float(out.estimate), 2), bool(out.low < out.estimate < out.high)
    (0.15, True)
    """
    if method not in METHODS:
        raise ValueError(f"bootstrap: method must be one of {', '.join(METHODS)}; got {method!r}")
    estimate = kind.estimate()
    if not n_boot:
        nan = np.full(np.shape(estimate), np.nan)
        return Bootstrap(estimate, nan[()], nan[()], np.empty((0, *np.shape(estimate))))
    replicates = kind.draw(rng, n_boot)
    q_low, q_high = percentile_interval(replicates, confidence, axis=0, skip_nan=skip_nan)
    if method == "basic":
        q_low, q_high = np.maximum(2 * estimate - q_high, bounds[0]), np.minimum(2 * estimate - q_low, bounds[1])
    return Bootstrap(estimate, q_low, q_high, replicates)


# --- permutation tests ------------------------------------------------------------------------

def mean_difference(x, y, axis=-1):
    """Statistic of the two-sample permutation tests: ``mean(x) - mean(y)``."""
    return np.mean(x, axis=axis) - np.mean(y, axis=axis)


def permutation_test(data, statistic=mean_difference, *, seed: int, **options):
    """``scipy.stats.permutation_test(data, statistic, vectorized=True, ...)`` seeded by ``seed``.

    scipy renamed the generator argument ``random_state`` to ``rng`` (1.15); the pinned lower
    bound of scipy has ``rng``, and this is the one place that passes it.
    """
    return stats.permutation_test(data, statistic, vectorized=True, rng=np.random.default_rng(seed), **options)


__all__ = ["Binomial", "Bootstrap", "Difference", "MISSING_COLUMN", "Means", "Multinomial", "Replicates", "Table",
           "bootstrap", "bootstrap_indices", "bootstrap_means", "cell_rng", "mean_difference", "percentile_interval",
           "permutation_test", "require_columns"]
