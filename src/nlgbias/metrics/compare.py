"""Compare two sets of texts by a scorer's class probabilities (like evaluate's regard "compare").

Unlike evaluate's ``regard_difference``, every label is reported with both means, the
difference, a bootstrap CI and a permutation p-value, and a label missing from a scorer's
output is an error, not a silent 0.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from nlgbias.metrics.shares import cell_seed


def probability_difference(details_a: Sequence[dict], details_b: Sequence[dict], *, labels: Sequence[str],
                           n_boot: int = 2000, confidence: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """Mean probability of each label in A minus in B.

    Parameters
    ----------
    details_a, details_b : sequences of dict
        Per-text probabilities, e.g. the ``details`` column of the regard scorer.
    labels : sequence of str

    Returns
    -------
    pandas.DataFrame
        ``label, n_a, mean_a, n_b, mean_b, diff, ci_low, ci_high, p``: percentile bootstrap CI
        (each set resampled within itself) and a two-sided permutation test of the difference in
        means (9,999 random relabellings).
    """
    rows = []
    alpha = (1 - confidence) / 2
    for label in labels:
        try:
            a = np.array([float(d[label]) for d in details_a])
            b = np.array([float(d[label]) for d in details_b])
        except (KeyError, TypeError):
            raise ValueError(f"probability_difference: label {label!r} missing from a scorer's output") from None
        if len(a) == 0 or len(b) == 0:
            raise ValueError("probability_difference: both sets need at least one text")
        rng = np.random.default_rng(cell_seed(seed, label))
        boot = (rng.choice(a, (n_boot, len(a))).mean(axis=1) - rng.choice(b, (n_boot, len(b))).mean(axis=1))
        test = stats.permutation_test((a, b), lambda x, y, axis: x.mean(axis=axis) - y.mean(axis=axis),
                                      vectorized=True, n_resamples=9999, rng=np.random.default_rng(cell_seed(seed, label, "p")))
        low, high = np.quantile(boot, [alpha, 1 - alpha])
        rows.append((label, len(a), a.mean(), len(b), b.mean(), a.mean() - b.mean(), low, high, float(test.pvalue)))
    return pd.DataFrame(rows, columns=["label", "n_a", "mean_a", "n_b", "mean_b", "diff", "ci_low", "ci_high", "p"])
