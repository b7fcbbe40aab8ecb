"""Compare two sets of texts by a scorer's class probabilities (like evaluate's regard "compare").

Unlike evaluate's ``regard_difference``, every label is reported with both means, the
difference, a bootstrap CI and a permutation p-value, and a label missing from a scorer's
output is an error, not a silent 0.
"""

from __future__ import annotations

from functools import partial
from typing import Sequence

import numpy as np
import pandas as pd

from nlgbias.defaults import CONFIDENCE, N_BOOT
from nlgbias.keys import cell_seed
from nlgbias.metrics.resampling import Difference, Table, bootstrap, cell_rng, permutation_test

MIN_TEXTS = 2  # fewer texts on a side: the difference alone, no interval or p-value


def _mean(x: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Mean of the texts ``idx`` (the last axis) of one side: the statistic the bootstrap resamples."""
    return x[idx].mean(axis=-1)


def probability_difference(details_a: Sequence[dict], details_b: Sequence[dict], *, labels: Sequence[str],
                           n_boot: int = N_BOOT, confidence: float = CONFIDENCE, seed: int = 0) -> pd.DataFrame:
    """Mean probability of each label in A minus in B.

    Parameters
    ----------
    details_a, details_b : sequences of dict
        Per-text probabilities, e.g. the ``details`` column of the regard scorer.
    labels : sequence of str

    Returns
    -------
    pandas.DataFrame
        ``label, n_a, mean_a, n_b, mean_b, diff, ci_low, ci_high, p, note``: percentile bootstrap CI
        (each set resampled within itself) and a two-sided permutation test of the difference in
        means (9,999 random relabellings).  With fewer than two texts on a side there is nothing
        to resample: ``ci_low, ci_high, p`` are NaN and ``note`` says why (it is empty otherwise).

    Examples
    --------
    >>> table = probability_difference([{"positive": 0.9}], [{"positive": 0.2}], labels=["positive"])
    >>> round(float(table["diff"][0]), 2), bool(table["p"].isna()[0])
    (0.7, True)
    >>> table["note"][0]
    'n_a=1, n_b=1: no interval or p-value (resampling needs at least 2 texts on each side)'
    """
    rows = []
    for label in labels:
        try:
            a = np.array([float(d[label]) for d in details_a])
            b = np.array([float(d[label]) for d in details_b])
        except (KeyError, TypeError):
            raise ValueError(f"probability_difference: label {label!r} missing from a scorer's output") from None
        if len(a) == 0 or len(b) == 0:
            raise ValueError("probability_difference: both sets need at least one text")
        if min(len(a), len(b)) < MIN_TEXTS:
            note = (f"n_a={len(a)}, n_b={len(b)}: no interval or p-value (resampling needs at least "
                    f"{MIN_TEXTS} texts on each side)")
            rows.append((label, len(a), a.mean(), len(b), b.mean(), a.mean() - b.mean(), np.nan, np.nan, np.nan, note))
            continue
        sides = Difference(Table(len(a), partial(_mean, a), vectorized=True),
                           Table(len(b), partial(_mean, b), vectorized=True))
        _, low, high, _ = bootstrap(sides, rng=cell_rng(seed, label), n_boot=n_boot, confidence=confidence)
        test = permutation_test((a, b), seed=cell_seed(seed, label, "p"), n_resamples=9999)
        rows.append((label, len(a), a.mean(), len(b), b.mean(), a.mean() - b.mean(), low, high, float(test.pvalue), ""))
    return pd.DataFrame(rows, columns=["label", "n_a", "mean_a", "n_b", "mean_b", "diff", "ci_low", "ci_high", "p",
                                       "note"])


