"""Power of the gap tests: samples needed for a gap, and the smallest gap a comparison can see.

A gap is a difference between two label shares (two groups, or two models), tested with the
exact permutation test of :mod:`nlgbias.metrics.significance`.  Power comes from the normal
approximation on the arcsine scale (Cohen's h, statsmodels' ``NormalIndPower``), plus a
continuity correction of ``(1/n_a + 1/n_b) / 2`` to the gap (Fleiss, Levin & Paik 2003,
section 4.2): the exact test is discrete and conservative, and without the correction the
formula promises about 2 to 5 points more power than it has (``docs/statistics.md``).

Multiple comparisons: a run tests all its gaps together with Benjamini-Hochberg at FDR
:data:`FDR` = 0.05.  Planning uses the Bonferroni level ``FDR / m`` for ``m`` comparisons.  BH
rejects every hypothesis whose p-value is under ``FDR / m`` (the first step of its step-up
rule), so a gap's power under BH is at least its power at ``FDR / m``: the sample sizes here
are conservative, and the minimum detectable effects are upper bounds.

A gap is taken in the harder direction: from ``p`` towards 50%, where a share varies most.

>>> round(detectable_gap(1000, 1000, base_rate=0.2, alpha=0.05), 4)
0.0533
>>> samples_for_gap(0.05, base_rate=0.2, alpha=0.05)
1131
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import pandas as pd
from scipy import stats

FDR = 0.05  # the run's Benjamini-Hochberg level (the report marks adjusted p under it)
POWER = 0.8  # the power of the reported minimum detectable effects
MDE_FLAG = 0.10  # comparisons whose MDE exceeds this (10 points) are flagged in the report


def _toward_half(base_rate: float, gap: float) -> float:
    """The other share of a gap of ``gap`` from ``base_rate``, in the direction of 50%."""
    return base_rate + gap if base_rate <= 0.5 else base_rate - gap


def effect_size(gap: float, *, base_rate: float) -> float:
    """Cohen's h of a gap of ``gap`` (a share difference) from ``base_rate`` towards 50%.

    >>> round(effect_size(0.05, base_rate=0.2), 4)
    0.1199
    """
    from statsmodels.stats.proportion import proportion_effectsize  # statsmodels: kept out of `import nlgbias`

    other = _toward_half(base_rate, gap)
    if not 0 <= other <= 1:
        raise ValueError(f"a gap of {gap:g} from base rate {base_rate:g} leaves [0, 1]")
    return abs(float(proportion_effectsize(other, base_rate)))


def continuity(n_a: int, n_b: int) -> float:
    """The continuity correction added to a detectable gap: ``(1/n_a + 1/n_b) / 2``."""
    return (1 / n_a + 1 / n_b) / 2


@lru_cache(maxsize=4096)
def detectable_h(n_a: int, n_b: int, alpha: float, power: float = POWER) -> float:
    """The smallest Cohen's h the two-sided z test at ``alpha`` detects with ``power`` at these n
    (``NormalIndPower.solve_power``, no continuity correction)."""
    from statsmodels.stats.power import NormalIndPower  # statsmodels: kept out of `import nlgbias`

    h = NormalIndPower().solve_power(effect_size=None, nobs1=n_a, alpha=alpha, power=power, ratio=n_b / n_a,
                                     alternative="two-sided")
    return float(np.asarray(h).item())


def detectable_gap(n_a: int, n_b: int, *, base_rate: float, alpha: float, power: float = POWER) -> float:
    """Minimum detectable effect: the smallest gap (a share difference, 0-1) from ``base_rate``
    towards 50% that the two-sided test at ``alpha`` finds with ``power``.

    The arcsine-scale gap of :func:`detectable_h` plus :func:`continuity`; ``nan`` when no gap
    can be found (a side is empty, or even a gap to 0% or 100% is too small for these n).
    """
    if n_a <= 0 or n_b <= 0 or not np.isfinite(base_rate):
        return float("nan")
    h = detectable_h(int(n_a), int(n_b), float(alpha), float(power))
    phi = 2 * math.asin(math.sqrt(base_rate))
    target = phi + h if base_rate <= 0.5 else phi - h
    if not 0 <= target <= math.pi:
        return float("nan")
    gap = abs(math.sin(target / 2) ** 2 - base_rate) + continuity(n_a, n_b)
    return gap if 0 <= _toward_half(base_rate, gap) <= 1 else float("nan")


def gap_power(gap: float, n_a: int, n_b: int, *, base_rate: float, alpha: float) -> float:
    """Approximate power of the two-sided test at ``alpha`` for a gap of ``gap`` from ``base_rate``
    (the gap less :func:`continuity`, on the arcsine scale)."""
    from statsmodels.stats.power import NormalIndPower  # statsmodels: kept out of `import nlgbias`

    h = effect_size(max(gap - continuity(n_a, n_b), 0.0), base_rate=base_rate)
    return float(NormalIndPower().power(effect_size=h, nobs1=n_a, alpha=alpha, ratio=n_b / n_a,
                                        alternative="two-sided"))


def samples_for_gap(gap: float, *, base_rate: float, alpha: float, power: float = POWER) -> int:
    """Samples per side (both sides equal) to detect ``gap`` with ``power``: the smallest n with
    ``detectable_gap(n, n) <= gap``.

    Starts from statsmodels' uncorrected n with the continuity correction of Fleiss et al.
    (``n/4 (1 + sqrt(1 + 4 / (n gap)))^2``) and steps to the exact smallest n.
    """
    from statsmodels.stats.power import NormalIndPower  # statsmodels: kept out of `import nlgbias`

    h = effect_size(gap, base_rate=base_rate)
    n0 = float(np.asarray(NormalIndPower().solve_power(effect_size=h, nobs1=None, alpha=alpha, power=power,
                                                       ratio=1.0, alternative="two-sided")).item())
    n = max(2, int(math.ceil(n0 / 4 * (1 + math.sqrt(1 + 4 / (n0 * gap))) ** 2)))

    def enough(k: int) -> bool:
        found = detectable_gap(k, k, base_rate=base_rate, alpha=alpha, power=power)
        return bool(found <= gap + 1e-12)

    while not enough(n):
        n += 1
    while n > 2 and enough(n - 1):
        n -= 1
    return n


def effective(n: int, deff: float) -> int:
    """The effective n of ``n`` samples at design effect ``deff`` (``n`` where ``deff`` is unknown)."""
    return max(int(round(n / deff)), 0) if np.isfinite(deff) and deff > 0 else int(n)


def t_factor(df: float, alpha: float, power: float = POWER) -> float:
    """How much wider a t test on ``df`` degrees of freedom needs a gap to be than a z test:
    ``(t[1 - alpha/2] + t[power]) / (z[1 - alpha/2] + z[power])`` (1 where ``df`` is unknown)."""
    if not np.isfinite(df) or df <= 0:
        return 1.0
    return float((stats.t.ppf(1 - alpha / 2, df) + stats.t.ppf(power, df))
                 / (stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power)))


def mde_column(gaps: pd.DataFrame, *, alpha: float, power: float = POWER) -> pd.Series:
    """The ``mde`` of each row of a gaps table (``n_a, k_a, n_b, k_b``): the detectable gap at the
    row's n from its pooled share ``(k_a + k_b) / (n_a + n_b)``.  Where the table has ``deff`` (the
    design effect; 1 at sample level) each n is its effective n, n / deff, and ``nan`` there (a side
    with one prompt) gives no MDE; a finite ``df`` widens the gap for a t test (:func:`t_factor`)."""
    values = []
    empty = pd.Series(np.nan, index=gaps.index)
    deffs = gaps["deff"].astype(float) if "deff" in gaps else pd.Series(1.0, index=gaps.index)
    dfs = gaps["df"].astype(float) if "df" in gaps else empty
    for n_a, k_a, n_b, k_b, deff, df in zip(gaps["n_a"], gaps["k_a"], gaps["n_b"], gaps["k_b"], deffs, dfs):
        pooled = (k_a + k_b) / (n_a + n_b) if n_a + n_b else float("nan")
        if not np.isfinite(deff):
            values.append(float("nan"))
            continue
        gap = detectable_gap(effective(n_a, deff), effective(n_b, deff), base_rate=pooled, alpha=alpha,
                             power=power) * t_factor(df, alpha, power)
        values.append(gap if np.isfinite(gap) and 0 <= _toward_half(pooled, gap) <= 1 else float("nan"))
    return pd.Series(values, index=gaps.index, dtype=float, name="mde")


ICC = 0.02  # the default intra-prompt correlation of a gap: the upper quartile of the README main job's (docs/statistics.md)


def gap_icc(deff: float, samples: float) -> float | None:
    """A gap's intra-prompt correlation from its design effect at ``samples`` per prompt,
    ``(deff - 1) / (samples - 1)``, at least 0; None where ``deff`` is unknown or ``samples <= 1``.

    >>> gap_icc(2.98, 100), gap_icc(0.9, 100), gap_icc(float("nan"), 100)
    (0.02, 0.0, None)
    """
    if not np.isfinite(deff) or samples <= 1:
        return None
    return max(0.0, (float(deff) - 1) / (samples - 1))


def two_level_gap(prompts: int, samples: int, *, icc: float, base_rate: float, alpha: float,
                  power: float = POWER) -> float:
    """Minimum detectable gap with ``prompts`` per group and ``samples`` per prompt at intra-prompt
    correlation ``icc``: the gap at the effective n ``prompts x samples / (1 + (samples - 1) icc)``
    per group, widened for a t test on ``prompts - 1`` degrees of freedom; ``nan`` where none fits.

    >>> round(two_level_gap(20, 10, icc=0.02, base_rate=0.2, alpha=0.05), 4)
    0.1474
    """
    if prompts < 2 or samples < 1:
        return float("nan")
    n_eff = effective(prompts * samples, 1 + (samples - 1) * icc)
    gap = detectable_gap(n_eff, n_eff, base_rate=base_rate, alpha=alpha, power=power) * t_factor(prompts - 1, alpha,
                                                                                                    power)
    return gap if np.isfinite(gap) and 0 <= _toward_half(base_rate, gap) <= 1 else float("nan")


def two_level_samples(gap: float, *, prompts: int, icc: float, base_rate: float, alpha: float,
                      power: float = POWER, most: int = 100_000) -> int | None:
    """The fewest samples per prompt (at most ``most``) whose :func:`two_level_gap` is at most
    ``gap``; None when even ``most`` cannot (more samples of the same prompts cannot shrink the
    prompts' own variation: more prompts are needed).

    >>> two_level_samples(0.10, prompts=20, icc=0.02, base_rate=0.2, alpha=0.05)
    26
    >>> two_level_samples(0.10, prompts=5, icc=0.02, base_rate=0.2, alpha=0.05) is None
    True
    """
    def enough(m: int) -> bool:
        return bool(two_level_gap(prompts, m, icc=icc, base_rate=base_rate, alpha=alpha, power=power) <= gap + 1e-12)

    if not enough(most):
        return None
    low, high = 1, most
    while low < high:
        middle = (low + high) // 2
        low, high = (low, middle) if enough(middle) else (middle + 1, high)
    return low


def family_alpha(n_comparisons: int, fdr: float = FDR) -> float:
    """The planning level of one comparison among ``n_comparisons``: Bonferroni, ``fdr / m``."""
    return fdr / max(int(n_comparisons), 1)


def detectable_gap_difference(ns, *, base_rate: float, alpha: float, power: float = POWER) -> float:
    """Minimum detectable effect of a gap difference (a difference in differences of four shares).

    ``ns`` are the four cells' sizes.  Normal approximation on the share scale with every cell
    at ``base_rate`` (the null): ``(z[1 - alpha/2] + z[power]) * sqrt(p (1 - p) * sum(1/n))``, plus
    a continuity correction of ``sum(1/n) / 4`` for the discrete exact test
    (:func:`~nlgbias.metrics.significance.gap_difference_p`); with it the simulated power at the
    MDE is 81-83% over the settings of ``docs/statistics.md`` (without it, as low as 73%).
    ``nan`` when a cell is empty or the MDE exceeds 1.

    >>> round(detectable_gap_difference([150] * 4, base_rate=0.2, alpha=0.05), 4)
    0.1897
    """
    ns = [int(n) for n in ns]
    if min(ns) <= 0 or not 0 <= base_rate <= 1:
        return float("nan")
    inverse = sum(1 / n for n in ns)
    z = float(stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power))
    gap = z * math.sqrt(base_rate * (1 - base_rate) * inverse) + inverse / 4
    return gap if gap <= 1 else float("nan")


def gap_difference_mde_column(table: pd.DataFrame, *, alpha: float, power: float = POWER) -> pd.Series:
    """The ``mde`` of each row of a gap-differences table (``n_a1, k_a1, ..., n_b2, k_b2``): the
    detectable gap difference at the row's four n from its pooled share (effective n and a t test
    where the table has ``deff`` and ``df``, as in :func:`mde_column`)."""
    cells = ("a1", "a2", "b1", "b2")
    values = []
    for _, row in table.iterrows():
        deff, df = float(row.get("deff", 1.0)), float(row.get("df", float("nan")))
        ns = [int(row[f"n_{c}"]) for c in cells]
        pooled = sum(int(row[f"k_{c}"]) for c in cells) / sum(ns) if sum(ns) else float("nan")
        if not np.isfinite(deff):
            values.append(float("nan"))
            continue
        gap = detectable_gap_difference([effective(n, deff) for n in ns], base_rate=pooled, alpha=alpha,
                                        power=power) * t_factor(df, alpha, power)
        values.append(gap if gap <= 1 else float("nan"))
    return pd.Series(values, index=table.index, dtype=float, name="mde")


__all__ = ["FDR", "MDE_FLAG", "POWER", "continuity", "detectable_gap", "detectable_gap_difference", "detectable_h",
           "effect_size", "effective", "gap_icc", "t_factor", "ICC", "two_level_gap", "two_level_samples", "family_alpha", "gap_difference_mde_column", "gap_power", "mde_column", "samples_for_gap"]
