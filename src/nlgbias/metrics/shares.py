"""Label shares per group with bootstrap CIs, and differences between groups or models.

Both functions read a *scored* table in long format: one row per (generation, scorer) with a
``label`` column and the columns that define a cell (by default ``model, context, scorer,
group``).  Resampling happens within each cell, so every bootstrap replicate keeps each
group's n; each cell draws from its own seed derived from the run seed and the cell's key,
so row order never changes a result.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from nlgbias.metrics.resampling import Binomial, Difference, Multinomial, bootstrap, cell_rng, require_columns
from nlgbias.metrics.significance import permutation_p

BY = ("model", "context", "scorer", "group")
SHARE_COLUMNS = ["label", "n", "k", "share", "ci_low", "ci_high", "small_n"]
DIFF_COLUMNS = ["n_a", "k_a", "share_a", "n_b", "k_b", "share_b", "diff", "ci_low", "ci_high", "p", "small_n"]


def group_shares(scored: pd.DataFrame, *, by: Sequence[str] = BY, labels: Sequence[str] | None = None,
                 n_boot: int = 2000, confidence: float = 0.95, seed: int = 0, min_n: int = 30) -> pd.DataFrame:
    """Share of each label within each cell, with a percentile bootstrap CI.

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

    Returns
    -------
    pandas.DataFrame
        One row per (cell, label): the ``by`` columns then ``label, n, k, share, ci_low,
        ci_high, small_n``; cells in order of first appearance, labels in ``labels`` order.

    Notes
    -----
    Percentile interval of the bootstrap distribution of the share.  A share of 0 or 1 has a
    zero-width interval; read it together with ``n``.

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
    rows = []
    for key, cell in scored.groupby(by, sort=False, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        cell_labels = list(labels) if labels is not None else _labels_for(scored, cell, by)
        counts = cell["label"].value_counts()
        k = np.array([int(counts.get(label, 0)) for label in cell_labels])
        n = int(len(cell))
        if n:
            _, low, high, _ = bootstrap(Multinomial(n, k / n), rng=cell_rng(seed, *key), n_boot=n_boot,
                                        confidence=confidence)
        else:
            low = high = k * np.nan
        for j, label in enumerate(cell_labels):
            rows.append([*key, label, n, int(k[j]), k[j] / n if n else np.nan, float(low[j]), float(high[j]), n < min_n])
    return pd.DataFrame(rows, columns=by + SHARE_COLUMNS)


def _labels_for(scored: pd.DataFrame, cell: pd.DataFrame, by: list[str]) -> list[str]:
    if "scorer" in by and "scorer" in cell.columns:
        pool = scored.loc[scored["scorer"] == cell["scorer"].iloc[0], "label"]
    else:
        pool = scored["label"]
    return sorted(pool.unique().tolist())


def differences(shares: pd.DataFrame, *, column: str, pairs: Sequence[tuple[str, str]],
                within: Sequence[str], labels: Sequence[str] = ("negative", "positive"),
                n_boot: int = 2000, confidence: float = 0.95, seed: int = 0,
                min_n: int = 30) -> pd.DataFrame:
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

    Returns
    -------
    pandas.DataFrame
        One row per (within..., label, pair): the ``within`` columns, ``label``, ``<column>_a``,
        ``<column>_b``, then ``n_a, k_a, share_a, n_b, k_b, share_b, diff, ci_low, ci_high, p,
        small_n``.  Pairs with a side absent from a cell are skipped.

    Notes
    -----
    CI: percentile bootstrap of the difference, each side resampled within itself (binomial
    counts).  p: exact two-sided permutation test (:func:`~nlgbias.metrics.significance.permutation_p`).
    Adjust p for multiple comparisons afterwards (``p_adj`` is added by :func:`compute_metrics`).
    """
    within = list(within)
    require_columns(shares, within + [column, "label", "n", "k"], "differences", "shares")
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
            if n_a and n_b:
                _, low, high, _ = bootstrap(Difference(Binomial(n_a, share_a), Binomial(n_b, share_b)),
                                            rng=cell_rng(seed, *key, a, b), n_boot=n_boot, confidence=confidence)
            else:
                low = high = np.nan
            rows.append([*key, a, b, n_a, k_a, share_a, n_b, k_b, share_b, share_a - share_b,
                         float(low), float(high), permutation_p(k_a, n_a, k_b, n_b), min(n_a, n_b) < min_n])
    return pd.DataFrame(rows, columns=within + ["label", f"{column}_a", f"{column}_b"] + DIFF_COLUMNS)
