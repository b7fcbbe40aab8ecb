"""Prompt-level inference: shares and gaps when samples are nested in prompts.

A run draws prompts (a template filled with a group, or a BOLD sentence) and then several samples
of each.  Samples of one prompt are not independent draws of the group's behaviour: they share the
prompt.  This module treats the *unit* (the template where groups share templates, the prompt
where each group has its own) as the sampling unit and the samples as draws within it.

In:  per-unit counts of one or more cells, ``{unit: (n, k)}`` (a cell is model, context, scorer,
     group; ``k`` samples with the label out of ``n``).
Out: a share or a contrast of shares (a gap, a gap difference) with a standard error that counts
     units, its degrees of freedom, the design effect and the effective n.

The estimate is the pooled share (``sum k / sum n``), as at sample level.  Its variance is the
cluster-robust (linearisation) variance of a ratio, with the small-sample factor ``U / (U - 1)``
per stratum of units:

- **paired** (the cells share their units: sheng2019's groups share templates, two models share
  prompts): one stratum, the per-unit contrasts vary together, df = U - 1.  With equal samples per
  unit this is exactly the t interval on the per-template gaps.
- **unpaired** (each cell has its own prompts: BOLD): one stratum per cell, and the degrees of
  freedom of the smallest (Hsu's conservative choice: Welch-Satterthwaite's let 13% of null gaps
  through at 5 prompts per group in ``scripts/sim_prompt_level.py``).

The variance is never taken below the *within-unit* (binomial) variance, the variance the
contrast would have if the units were fixed; a cell at 0/n or n/n uses Agresti-Caffo's
``(k + 1) / (n + 2)`` there, so no interval collapses to zero width.  A stratum with one unit
leaves the variance unknown: the interval and p are ``nan`` (a gap between two prompts says
nothing about two groups).

:func:`stratified_p` is the test *conditional on the units* (templates fixed): the exact
stratified permutation test (group labels permuted within each template), the null distribution
the convolution of one hypergeometric per template.

>>> est = contrast([(1.0, {"t1": (100, 30), "t2": (100, 50)}), (-1.0, {"t1": (100, 10), "t2": (100, 40)})])
>>> round(est.estimate, 3), est.df, round(est.se, 4)
(0.15, 1.0, 0.05)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
from scipy import stats

from nlgbias.defaults import CONFIDENCE
from nlgbias.metrics.significance import permutation_p

Units = Mapping[object, tuple[int, int]]  # unit -> (n, k)


@dataclass(frozen=True)
class Contrast:
    """A share or contrast of shares with its prompt-level standard error.

    ``estimate``: sum of weight x pooled share.  ``se``: the standard error used (``nan`` when a
    stratum has one unit).  ``df``: degrees of freedom of its t reference.  ``se_binomial``: the
    standard error if every sample were independent (the sample-level analysis).  ``units``: the
    distinct units.  ``n``: samples over all cells.
    """

    estimate: float
    se: float
    df: float
    se_binomial: float
    units: int
    n: int

    @property
    def deff(self) -> float:
        """Design effect: the variance used over the variance of independent samples."""
        if not self.se_binomial > 0 or not np.isfinite(self.se):
            return float("nan")
        return (self.se / self.se_binomial) ** 2

    def interval(self, confidence: float = CONFIDENCE, bounds: tuple[float, float] = (-1.0, 1.0)) -> tuple[float, float]:
        """The t interval ``estimate +- t[df] se``, clipped to ``bounds``."""
        if not np.isfinite(self.se) or not self.df > 0:
            return float("nan"), float("nan")
        half = float(stats.t.ppf(0.5 + confidence / 2, self.df)) * self.se
        return max(bounds[0], self.estimate - half), min(bounds[1], self.estimate + half)

    def p_value(self) -> float:
        """Two-sided t test of ``estimate == 0`` on ``df`` degrees of freedom."""
        if not np.isfinite(self.se) or not self.df > 0:
            return float("nan")
        if self.se == 0:
            return 1.0 if self.estimate == 0 else 0.0
        return float(min(1.0, 2 * stats.t.sf(abs(self.estimate) / self.se, self.df)))


def contrast(cells: Sequence[tuple[float, Units]]) -> Contrast:
    """The prompt-level estimate of ``sum w_i share_i`` over ``cells`` = ``[(w_i, {unit: (n, k)})]``.

    Cells that share units are one stratum (paired); cells without a shared unit are separate
    strata (unpaired).  See the module docstring for the variance and its floor.  Units are summed
    in sorted order, so neither row nor dict order changes a bit of the result.
    """
    cells = [(w, _sorted(units)) for w, units in cells]
    totals = [(w, sum(n for n, _ in units.values()), sum(k for _, k in units.values())) for w, units in cells]
    if any(n <= 0 for _, n, _ in totals):
        return Contrast(float("nan"), float("nan"), float("nan"), float("nan"), 0, 0)
    shares = [k / n for _, n, k in totals]
    estimate = float(sum(w * p for (w, _, _), p in zip(totals, shares)))
    binomial = sum(w * w * p * (1 - p) / n for (w, n, _), p in zip(totals, shares))
    within = 0.0  # the variance with the units fixed (the floor)
    z: dict[object, float] = {}  # each unit's linearised contribution
    for (w, n_cell, k_cell), p, (_, units) in zip(totals, shares, cells):
        degenerate = k_cell in (0, n_cell)
        if degenerate:
            q = (k_cell + 1) / (n_cell + 2)  # Agresti-Caffo's share for the floor
            within += w * w * q * (1 - q) / (n_cell + 2)
        for unit, (n, k) in units.items():
            if n <= 0:
                continue
            if not degenerate:
                within += w * w * k * (1 - k / n) / n_cell ** 2
            z[unit] = z.get(unit, 0.0) + w * (k - p * n) / n_cell
    strata = _strata([[u for u, (n, _) in units.items() if n > 0] for _, units in cells])
    parts = []
    for members in strata:
        values = np.array([z[u] for u in members])
        count = len(values)
        parts.append((count, count / (count - 1) * float(np.sum((values - values.mean()) ** 2))
                      if count > 1 else float("nan")))
    cluster = sum(v for _, v in parts)
    df = float(min(c for c, _ in parts) - 1)  # one stratum: U - 1; several: Hsu's conservative choice
    se = math.sqrt(max(cluster, within)) if np.isfinite(cluster) else float("nan")
    return Contrast(estimate, se, df, math.sqrt(binomial), len(z), sum(n for _, n, _ in totals))


def _sorted(units: Units) -> dict:
    """``units`` in the order of their keys (as text): sums then never depend on the table's row order."""
    return dict(sorted(units.items(), key=lambda item: str(item[0])))


def _strata(unit_sets: list[list]) -> list[list]:
    """Group units into strata: units of cells that share a unit belong together."""
    parent: dict[object, object] = {}

    def find(u):
        while parent.setdefault(u, u) != u:
            u = parent[u]
        return u

    for units in unit_sets:
        first = None
        for u in units:
            if first is None:
                first = find(u)
            else:
                parent[find(u)] = first
    out: dict[object, dict] = {}
    for units in unit_sets:
        for u in units:
            out.setdefault(find(u), {})[u] = None
    return [list(members) for members in out.values()]


def intraclass(units: Units) -> float:
    """ANOVA estimate of the intra-prompt correlation of a 0/1 outcome in one cell (``nan`` with
    fewer than 2 units or no within-unit replication); it can be negative by chance."""
    units = _sorted(units)
    sizes = np.array([n for n, _ in units.values() if n > 0], dtype=float)
    ones = np.array([k for n, k in units.values() if n > 0], dtype=float)
    total, count = sizes.sum(), len(sizes)
    if count < 2 or total <= count:
        return float("nan")
    share = ones.sum() / total
    between = float(np.sum(sizes * (ones / sizes - share) ** 2)) / (count - 1)
    within = float(np.sum(ones - ones ** 2 / sizes)) / (total - count)
    m0 = (total - float(np.sum(sizes ** 2)) / total) / (count - 1)
    denominator = between + (m0 - 1) * within
    return float((between - within) / denominator) if denominator > 0 else float("nan")


def wilson(share: float, n: float, critical: float) -> tuple[float, float]:
    """Wilson's score interval at ``critical`` (a z or t quantile) for ``share`` of ``n`` (may be an
    effective, non-whole n); never zero width for n > 0.

    >>> [round(v, 4) for v in wilson(0.0, 20, 1.959964)]
    [0.0, 0.1611]
    """
    if not n > 0 or not np.isfinite(share):
        return float("nan"), float("nan")
    c2 = critical * critical
    centre = (share + c2 / (2 * n)) / (1 + c2 / n)
    half = critical / (1 + c2 / n) * math.sqrt(share * (1 - share) / n + c2 / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class ShareStats:
    """One cell's share at prompt level: ``units``, ``icc``, ``deff`` (at least 1), ``n_eff`` (n /
    deff) and the Wilson interval at ``n_eff`` with a t[units - 1] quantile."""

    units: int
    icc: float
    deff: float
    n_eff: float
    ci_low: float
    ci_high: float


def share_stats(units: Units, confidence: float = CONFIDENCE) -> ShareStats:
    """Prompt-level statistics of one cell's share (see :class:`ShareStats`).  A cell with one unit,
    or at 0/n or n/n, has no estimable design effect: it uses 1 (a z quantile with one unit)."""
    n = sum(v for v, _ in units.values())
    result = contrast([(1.0, units)])
    count = result.units
    raw = result.deff if 0 < result.estimate < 1 else float("nan")
    deff = max(1.0, raw) if np.isfinite(raw) else 1.0
    critical = float(stats.t.ppf(0.5 + confidence / 2, count - 1) if count > 1 else stats.norm.ppf(0.5 + confidence / 2))
    low, high = wilson(result.estimate, n / deff, critical) if n else (float("nan"), float("nan"))
    return ShareStats(count, intraclass(units), deff, n / deff if n else float("nan"), low, high)


def stratified_p(side_a: Units, side_b: Units) -> float:
    """Exact two-sided p of ``share(a) - share(b)`` conditional on the units (templates fixed).

    Within each unit that both sides have, the group labels of its samples are permuted: the ones
    that land on side a are hypergeometric, independently across units, and the statistic is their
    sum (a Mantel-Haenszel-type statistic).  Its null distribution is the exact convolution.  Units
    only one side has carry no information and are left out; with no shared unit the test is the
    pooled permutation test (:func:`~nlgbias.metrics.significance.permutation_p`).  Two-sided:
    twice the smaller tail, capped at 1.

    >>> round(stratified_p({"t": (10, 9)}, {"t": (10, 2)}), 4)
    0.0055
    """
    shared = [u for u in _sorted(side_a) if u in side_b and side_a[u][0] > 0 and side_b[u][0] > 0]
    if not shared:
        (n_a, k_a), (n_b, k_b) = (tuple(map(sum, zip(*side.values()))) if side else (0, 0) for side in (side_a, side_b))
        return permutation_p(k_a, n_a, k_b, n_b)
    pmf = np.array([1.0])
    low = observed = 0
    for u in shared:
        (n_a, k_a), (n_b, k_b) = side_a[u], side_b[u]
        total, ones = n_a + n_b, k_a + k_b
        support = np.arange(max(0, ones - n_b), min(ones, n_a) + 1)
        pmf = np.convolve(pmf, np.exp(stats.hypergeom.logpmf(support, total, ones, n_a)))
        low += int(support[0])
        observed += k_a
    index = observed - low
    p_less = float(pmf[: index + 1].sum())
    p_greater = float(pmf[index:].sum())
    return float(min(1.0, 2 * min(p_less, p_greater)))


def units_of(table, by: Sequence[str], unit: str, label: str) -> dict[tuple, dict[object, tuple[int, int]]]:
    """``{cell key: {unit: (n, k)}}`` of a scored table (``by`` columns, ``unit``, ``label``):
    ``k`` counts rows whose label is ``label``."""
    grouped = (table.assign(_hit=(table["label"] == label).astype(int))
               .groupby([*by, unit], sort=True, dropna=False)["_hit"].agg(["size", "sum"]))
    out: dict[tuple, dict[object, tuple[int, int]]] = {}
    for key, (n, k) in zip(grouped.index, grouped.to_numpy()):
        out.setdefault(tuple(key[:-1]), {})[key[-1]] = (int(n), int(k))
    return out


__all__ = ["Contrast", "ShareStats", "contrast", "intraclass", "share_stats", "stratified_p", "units_of", "wilson"]
