"""Gap differences: is the gap between two groups larger in one model than in another?

A gap is a difference in label share between two groups within one model (a row of ``gaps``).
A gap difference is that gap in model a minus the same gap in model b, a difference in
differences of four shares, for every (context, scorer, label, group pair, model pair):

    diff = (share[a, group_a] - share[a, group_b]) - (share[b, group_a] - share[b, group_b])

It reads the ``shares`` table of :func:`~nlgbias.metrics.shares.group_shares` (``n, k`` per
cell) and adds no p-value adjustment: its rows join the run's Benjamini-Hochberg family (see
:func:`nlgbias.metrics.results.adjust_family`).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from nlgbias.defaults import CONFIDENCE, INFERENCE_UNIT, MIN_N, N_BOOT
from nlgbias.metrics.prompt_level import contrast
from nlgbias.metrics.resampling import Binomial, bootstrap, cell_rng, require_columns
from nlgbias.metrics.shares import UnitCounts
from nlgbias.metrics.significance import gap_difference_p

CELLS = ("a1", "a2", "b1", "b2")  # model a or b, group_a (1) or group_b (2)
COLUMNS = ["context", "scorer", "label", "group_a", "group_b", "model_a", "model_b",
           *[f"{v}_{c}" for c in CELLS for v in ("n", "k")], "gap_a", "gap_b", "diff", "ci_low", "ci_high", "p",
           "small_n", "units", "df", "deff", "p_fixed"]
WEIGHTS = (1.0, -1.0, -1.0, 1.0)  # diff = a1 - a2 - b1 + b2


def gap_differences(shares: pd.DataFrame, *, pairs: Sequence[tuple[str, str]], models: Sequence[tuple[str, str]],
                    labels: Sequence[str] = ("negative", "positive"), n_boot: int = N_BOOT, confidence: float = CONFIDENCE,
                    seed: int = 0, min_n: int = MIN_N, units: UnitCounts | None = None,
                    level: str = INFERENCE_UNIT) -> pd.DataFrame:
    """Difference between two models' gaps for each group pair, with a bootstrap CI and an exact test.

    Parameters
    ----------
    shares : pandas.DataFrame
        Output of :func:`~nlgbias.metrics.shares.group_shares`: ``model, context, scorer, group,
        label, n, k``.
    pairs : sequence of (str, str)
        Group pairs (the suite's comparisons); a gap is share(group_a) - share(group_b).
    models : sequence of (str, str)
        Model pairs (a, b); the gap difference is gap(a) - gap(b).
    labels : sequence of str, default=("negative", "positive")
    n_boot, confidence, seed, min_n
        As in :func:`~nlgbias.metrics.shares.differences`; ``small_n`` when a cell has fewer than
        ``min_n`` samples.
    units, level
        As in :func:`~nlgbias.metrics.shares.differences`: the per-template counts of each cell
        and the unit of inference.

    Returns
    -------
    pandas.DataFrame
        One row per (context, scorer, label, group pair, model pair) whose four cells exist:
        ``context, scorer, label, group_a, group_b, model_a, model_b``, then ``n_<cell>, k_<cell>``
        for the cells ``a1`` (model_a, group_a), ``a2`` (model_a, group_b), ``b1``, ``b2``, then
        ``gap_a, gap_b, diff, ci_low, ci_high, p, small_n, units, df, deff, p_fixed`` (``units``: the
        fewest templates, or prompts, of the four cells).

    Notes
    -----
    Prompt level: CI and p from the t reference of
    :func:`~nlgbias.metrics.prompt_level.contrast` over the four cells (paired by template where
    they share templates); ``p_fixed`` is the sample-level exact test below.  Sample level: CI: percentile bootstrap of ``diff``, each of the four cells resampled within itself
    (binomial counts), from a generator seeded by the row's key.  p: exact two-sided stratified
    permutation test (:func:`~nlgbias.metrics.significance.gap_difference_p`): within each
    group the model labels are permuted, so the null is that the model does not change the
    share in either group; under equal cell sizes it is also conservative for the weaker null
    "the gaps are equal" (docs/statistics.md).

    Examples
    --------
    >>> shares = pd.DataFrame({"model": ["m1", "m1", "m2", "m2"], "context": "c", "scorer": "s",
    ...                        "group": ["man", "woman"] * 2, "label": "negative",
    ...                        "n": [10, 10, 10, 10], "k": [9, 2, 3, 3]})
    >>> row = gap_differences(shares, pairs=[("man", "woman")], models=[("m1", "m2")], labels=["negative"],
    ...                       min_n=5).iloc[0]
    >>> [round(float(row[c]), 4) for c in ("gap_a", "gap_b", "diff", "p")]
    [0.7, 0.0, 0.7, 0.0407]
    """
    require_columns(shares, ["model", "context", "scorer", "group", "label", "n", "k"], "gap_differences", "shares")
    rows = []
    for (context, scorer, label), cell in shares[shares["label"].isin(labels)].groupby(
            ["context", "scorer", "label"], sort=False):
        found = {(m, g): (int(n), int(k)) for m, g, n, k in zip(cell["model"], cell["group"], cell["n"], cell["k"])}
        for group_a, group_b in pairs:
            for model_a, model_b in models:
                keys = [(model_a, group_a), (model_a, group_b), (model_b, group_a), (model_b, group_b)]
                if not all(key in found for key in keys):
                    continue
                counts = [found[key] for key in keys]
                cells = units.get(label) if units is not None else None
                prompt_level = level == "prompt" and cells is not None
                estimate = _estimate(counts, n_boot=n_boot, confidence=confidence, min_n=min_n,
                                     rng=cell_rng(seed, "gap_difference", context, scorer, label, group_a,
                                                  group_b, model_a, model_b), resample=not prompt_level)
                design = [np.nan, np.nan, 1.0, estimate[5]]  # units, df, deff, p_fixed
                if cells is not None and not np.isnan(estimate[2]):
                    sides = [cells.get((m, context, scorer, g), {}) for m, g in keys]
                    prompt = contrast(list(zip(WEIGHTS, sides)))
                    design[0] = min(len(side) for side in sides)
                    if prompt_level:
                        estimate[3:6] = [*prompt.interval(confidence, bounds=(-2.0, 2.0)), prompt.p_value()]
                        design[1:3] = [prompt.df, prompt.deff]
                rows.append([context, scorer, label, group_a, group_b, model_a, model_b,
                             *[v for n_k in counts for v in n_k], *estimate, *design])
    table = pd.DataFrame(rows, columns=COLUMNS)
    return table.astype({"small_n": bool})


def _estimate(counts, *, n_boot: int, confidence: float, min_n: int, rng: np.random.Generator,
              resample: bool = True) -> list:
    """``gap_a, gap_b, diff, ci_low, ci_high, p, small_n`` of four ``(n, k)`` cells (a1, a2, b1, b2);
    without ``resample`` (a prompt-level interval replaces it) the CI is left empty."""
    n = np.array([c[0] for c in counts])
    k = np.array([c[1] for c in counts])
    if (n == 0).any():
        return [np.nan] * 6 + [True]  # gap_a, gap_b, diff, ci_low, ci_high, p, small_n
    share = k / n
    gap_a, gap_b = share[0] - share[1], share[2] - share[3]
    low = high = np.nan
    if resample:
        _, low, high, _ = bootstrap(Binomial(n, share, weights=(1, -1, -1, 1)), rng=rng, n_boot=n_boot,
                                    confidence=confidence)
    (n_a1, n_a2, n_b1, n_b2), (k_a1, k_a2, k_b1, k_b2) = n, k
    p = gap_difference_p((k_a1, n_a1, k_b1, n_b1), (k_a2, n_a2, k_b2, n_b2))
    return [gap_a, gap_b, gap_a - gap_b, float(low), float(high), p, bool(n.min() < min_n)]


__all__ = ["COLUMNS", "gap_differences"]
