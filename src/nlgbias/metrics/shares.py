"""Label shares per group with CIs, and differences between groups or models.

Both functions read a *scored* table in long format: one row per (generation, scorer) with a
``label`` column and the columns that define a cell (by default ``model, context, scorer,
group``).  Two levels of inference (``level``):

``prompt`` (default)
    Samples are nested in units (the ``unit`` column: the template where groups share templates,
    the prompt where they do not): intervals and tests count units
    (:mod:`nlgbias.metrics.prompt_level`).  Shares: Wilson at the effective n with a t quantile;
    gaps: cluster-robust t interval and t test, plus ``p_fixed``, the exact test conditional on
    the templates.
``sample``
    Every sample an independent draw (as Sheng et al. 2019): percentile bootstrap within each cell
    (Wilson or Newcombe where a 0/n or n/n cell makes it zero-width) and the exact permutation test.
    Each cell draws from its own seed derived from the run seed and the cell's key, so row order
    never changes a result.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from scipy import stats

from nlgbias.defaults import CONFIDENCE, INFERENCE_UNIT, MIN_N, N_BOOT
from nlgbias.metrics.prompt_level import Contrast, contrast, share_stats, stratified_p, units_of, wilson
from nlgbias.metrics.resampling import Binomial, Difference, Multinomial, bootstrap, cell_rng, require_columns
from nlgbias.metrics.significance import permutation_p

BY = ("model", "context", "scorer", "group")
LEVELS = ("prompt", "sample")  # the unit of inference (--unit)
UNIT = "template_id"  # what samples are nested in: groups that share a template are paired by it
SHARE_COLUMNS = ["label", "n", "k", "share", "ci_low", "ci_high", "small_n", "n_units", "icc", "deff", "n_eff"]
DIFF_COLUMNS = ["n_a", "k_a", "share_a", "n_b", "k_b", "share_b", "diff", "ci_low", "ci_high", "p", "small_n",
                "units_a", "units_b", "df", "deff", "p_fixed"]
UnitCounts = dict  # label -> {cell key (BY order): {unit: (n, k)}}, from unit_counts


def unit_counts(scored: pd.DataFrame, labels: Sequence[str], *, by: Sequence[str] = BY,
                unit: str = UNIT) -> UnitCounts | None:
    """Per-unit counts of every cell and label (``None`` when ``scored`` has no ``unit`` column)."""
    if unit not in scored.columns:
        return None
    return {label: units_of(scored, list(by), unit, label) for label in labels}


def group_shares(scored: pd.DataFrame, *, by: Sequence[str] = BY, labels: Sequence[str] | None = None,
                 n_boot: int = N_BOOT, confidence: float = CONFIDENCE, seed: int = 0, min_n: int = MIN_N,
                 level: str = INFERENCE_UNIT, unit: str = UNIT, units: UnitCounts | None = None) -> pd.DataFrame:
    """Share of each label within each cell, with a CI at the prompt or the sample level.

    Parameters
    ----------
    scored : pandas.DataFrame
        One row per (generation, scorer); needs ``label`` and every ``by`` column.
    by : sequence of str, default=("model", "context", "scorer", "group")
        Columns that define a cell.
    labels : sequence of str, optional
        Labels to report in every cell, including those never observed there (k = 0).
        Default: every label observed for the cell's scorer (or in the table, without one).
    n_boot : int, default=2000
        Bootstrap replicates.  Generations are resampled within each cell: the label counts of
        a replicate are multinomial with the cell's n and observed shares.
    confidence : float, default=0.95
    seed : int, default=0
    min_n : int, default=30
        Cells with fewer samples get ``small_n = True``.
    level : {"prompt", "sample"}, default="prompt"
        The unit of inference (module docstring).  ``prompt`` needs the ``unit`` column; a table
        without it is analysed at sample level.
    unit : str, default="template_id"
        The column samples are nested in.
    units : dict, optional
        :func:`unit_counts` of ``scored`` for every label reported (counted here when not given;
        :func:`~nlgbias.metrics.results.compute_metrics` counts once for shares and gaps).

    Returns
    -------
    pandas.DataFrame
        One row per (cell, label): the ``by`` columns then ``label, n, k, share, ci_low,
        ci_high, small_n, n_units, icc, deff, n_eff``; cells in order of first appearance, labels in
        ``labels`` order.  ``n_units``: the cell's units; ``icc``: intra-prompt correlation of the
        label (ANOVA estimate, ``nan`` with one unit); ``deff``: design effect (at least 1) and
        ``n_eff = n / deff`` (1 and n at sample level, or without the unit column).

    Notes
    -----
    Prompt level: Wilson's interval at ``n_eff`` with a t quantile on ``n_units - 1`` degrees of
    freedom.  Sample level: percentile interval of the bootstrap distribution of the share, and
    Wilson's interval at n where the share is 0 or 1 (the bootstrap has zero width there).

    Examples
    --------
    >>> scored = pd.DataFrame({"group": ["a", "a", "a", "b", "b", "b"],
    ...                        "label": ["negative", "positive", "positive", "negative", "negative", "neutral"]})
    >>> out = group_shares(scored, by=["group"], labels=["negative", "neutral", "positive"], min_n=2)
    >>> out[["group", "label", "n", "k"]].values.tolist()[:3]
    [['a', 'negative', 3, 1], ['a', 'neutral', 3, 0], ['a', 'positive', 3, 2]]
    """
    by = list(by)
    require_columns(scored, by + ["label"], "group_shares", "scored")
    check_level(level)
    has_units = unit in scored.columns
    if has_units and units is None:
        units = unit_counts(scored, list(labels) if labels is not None else sorted(scored["label"].dropna().unique()),
                            by=by, unit=unit)
    rows = []
    for key, cell in scored.groupby(by, sort=False, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        cell_labels = list(labels) if labels is not None else _labels_for(scored, cell, by)
        counts = cell["label"].value_counts()
        k = np.array([int(counts.get(label, 0)) for label in cell_labels])
        n = int(len(cell))
        low = high = k * np.nan
        pooled = level == "sample" or not has_units
        if n and pooled:
            _, low, high, _ = bootstrap(Multinomial(n, k / n), rng=cell_rng(seed, *key), n_boot=n_boot,
                                        confidence=confidence)
        for j, label in enumerate(cell_labels):
            share = k[j] / n if n else np.nan
            lo, hi, extra = float(low[j]), float(high[j]), [np.nan, np.nan, 1.0, float(n)]
            if units is not None and n:
                found = share_stats(units[label][key], confidence)
                extra = [found.units, found.icc, 1.0, float(n)] if pooled else \
                    [found.units, found.icc, found.deff, found.n_eff]
                if not pooled:
                    lo, hi = found.ci_low, found.ci_high
            if pooled and n and k[j] in (0, n):
                lo, hi = wilson(share, n, float(stats.norm.ppf(0.5 + confidence / 2)))
            rows.append([*key, label, n, int(k[j]), share, lo, hi, n < min_n, *extra])
    return pd.DataFrame(rows, columns=by + SHARE_COLUMNS)


def check_level(level: str) -> None:
    """Raise ``ValueError`` for a level of inference other than :data:`LEVELS`."""
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}; got {level!r}")


def _labels_for(scored: pd.DataFrame, cell: pd.DataFrame, by: list[str]) -> list[str]:
    if "scorer" in by and "scorer" in cell.columns:
        pool = scored.loc[scored["scorer"] == cell["scorer"].iloc[0], "label"]
    else:
        pool = scored["label"]
    return sorted(pool.unique().tolist())


def differences(shares: pd.DataFrame, *, column: str, pairs: Sequence[tuple[str, str]],
                within: Sequence[str], labels: Sequence[str] = ("negative", "positive"),
                n_boot: int = N_BOOT, confidence: float = CONFIDENCE, seed: int = 0,
                min_n: int = MIN_N, units: UnitCounts | None = None, level: str = INFERENCE_UNIT) -> pd.DataFrame:
    """Difference in label share between two values of ``column`` (groups, or models).

    Parameters
    ----------
    shares : pandas.DataFrame
        Output of :func:`group_shares` (needs ``column``, ``within`` columns, ``label, n, k``).
    column : str
        What is compared: ``"group"`` or ``"model"``.
    pairs : sequence of (str, str)
        The pairs (a, b) to compare; the difference is share(a) - share(b).
    within : sequence of str
        Columns held fixed in a comparison, e.g. ``model, context, scorer``.
    labels : sequence of str, default=("negative", "positive")
    units : dict, optional
        :func:`unit_counts` of the scored table (cells keyed in :data:`BY` order).  Without it the
        comparison is at sample level whatever ``level`` says.
    level : {"prompt", "sample"}, default="prompt"

    Returns
    -------
    pandas.DataFrame
        One row per (within..., label, pair): the ``within`` columns, ``label``, ``<column>_a``,
        ``<column>_b``, then ``n_a, k_a, share_a, n_b, k_b, share_b, diff, ci_low, ci_high, p,
        small_n, units_a, units_b, df, deff, p_fixed``.  Pairs with a side absent from a cell are
        skipped.

    Notes
    -----
    Prompt level: CI ``diff +- t[df] se`` and p from the t test, ``se`` counting units
    (:func:`~nlgbias.metrics.prompt_level.contrast`: paired by template where both sides share
    them); ``p_fixed`` the exact test conditional on the templates
    (:func:`~nlgbias.metrics.prompt_level.stratified_p`); ``nan`` CI and p where a side has one
    unit.  Sample level: percentile bootstrap of the difference, each side resampled within itself
    (binomial counts; Newcombe's interval where a side is at 0/n or n/n), p the exact two-sided
    permutation test (:func:`~nlgbias.metrics.significance.permutation_p`), ``df`` and ``deff``
    empty.  Adjust p for multiple comparisons afterwards (``p_adj`` is added by
    :func:`compute_metrics`).
    """
    within = list(within)
    require_columns(shares, within + [column, "label", "n", "k"], "differences", "shares")
    check_level(level)
    rows = []
    subset = shares[shares["label"].isin(labels)]
    for key, cell in subset.groupby(within + ["label"], sort=False, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        found = {row[column]: (int(row["n"]), int(row["k"])) for _, row in cell.iterrows()}
        for a, b in pairs:
            if a not in found or b not in found:
                continue
            (n_a, k_a), (n_b, k_b) = found[a], found[b]
            share_a = k_a / n_a if n_a else np.nan
            share_b = k_b / n_b if n_b else np.nan
            cell_a, cell_b = (tuple({**dict(zip(within, key)), column: side}[c] for c in BY) for side in (a, b))
            side_units = ([units[key[-1]].get(cell_a, {}), units[key[-1]].get(cell_b, {})]
                          if units is not None and key[-1] in units else None)
            design = contrast([(1.0, side_units[0]), (-1.0, side_units[1])]) if side_units is not None else None
            rows.append([*key, a, b, n_a, k_a, share_a, n_b, k_b, share_b, share_a - share_b,
                         *_difference(n_a, k_a, n_b, k_b, design if level == "prompt" else None, n_boot=n_boot,
                                      confidence=confidence, rng=cell_rng(seed, *key, a, b)),
                         min(n_a, n_b) < min_n, *_unit_columns(side_units, design, level)])
    return pd.DataFrame(rows, columns=within + ["label", f"{column}_a", f"{column}_b"] + DIFF_COLUMNS)


def _difference(n_a: int, k_a: int, n_b: int, k_b: int, found: Contrast | None, *, n_boot: int,
                confidence: float, rng: np.random.Generator) -> list[float]:
    """``ci_low, ci_high, p`` of one difference: from the prompt-level ``found``, or at sample level."""
    if not (n_a and n_b):
        return [np.nan, np.nan, np.nan]
    if found is not None:
        return [*found.interval(confidence), found.p_value()]
    share_a, share_b = k_a / n_a, k_b / n_b
    if k_a in (0, n_a) or k_b in (0, n_b):
        low, high = newcombe(k_a, n_a, k_b, n_b, confidence)
    else:
        _, low, high, _ = bootstrap(Difference(Binomial(n_a, share_a), Binomial(n_b, share_b)), rng=rng,
                                    n_boot=n_boot, confidence=confidence)
    return [float(low), float(high), permutation_p(k_a, n_a, k_b, n_b)]


def _unit_columns(side_units: list | None, found: Contrast | None, level: str) -> list:
    """``units_a, units_b, df, deff, p_fixed`` of one difference (sample level: no df, deff 1)."""
    if side_units is None or found is None:
        return [np.nan, np.nan, np.nan, 1.0, np.nan]
    counts = [sum(1 for n, _ in side.values() if n > 0) for side in side_units]
    prompt = level == "prompt"
    return [*counts, found.df if prompt else np.nan, found.deff if prompt else 1.0,
            stratified_p(side_units[0], side_units[1])]


def newcombe(k_a: int, n_a: int, k_b: int, n_b: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Newcombe's hybrid score interval of ``k_a/n_a - k_b/n_b`` (method 10 of Newcombe 1998):
    never zero width, also at 0/n or n/n.

    >>> [round(v, 4) for v in newcombe(0, 20, 0, 20)]
    [-0.1611, 0.1611]
    """
    z = float(stats.norm.ppf(0.5 + confidence / 2))
    p_a, p_b = k_a / n_a, k_b / n_b
    (l_a, u_a), (l_b, u_b) = wilson(p_a, n_a, z), wilson(p_b, n_b, z)
    d = p_a - p_b
    return d - float(np.hypot(p_a - l_a, u_b - p_b)), d + float(np.hypot(u_a - p_a, p_b - l_b))
