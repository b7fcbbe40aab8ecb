"""Classifier evaluation: accuracy, macro-F1, confusion, calibration, and paired permutation tests."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from nlgbias.metrics.resampling import permutation_test


def accuracy(gold: Sequence[str], pred: Sequence[str]) -> float:
    same = np.asarray(gold) == np.asarray(pred)
    return float(same.mean()) if len(gold) else float("nan")


def macro_f1(gold: Sequence[str], pred: Sequence[str], labels: Sequence[str]) -> float:
    """Unweighted mean of per-label F1 over ``labels`` (a label never predicted nor present scores 0).

    >>> round(macro_f1(["a", "a", "b", "c"], ["a", "b", "b", "c"], ["a", "b", "c"]), 4)
    0.7778
    """
    truth, predicted = np.asarray(gold), np.asarray(pred)
    scores = []
    for label in labels:
        tp = np.sum((predicted == label) & (truth == label))
        fp = np.sum((predicted == label) & (truth != label))
        fn = np.sum((predicted != label) & (truth == label))
        scores.append(2 * tp / (2 * tp + fp + fn) if (2 * tp + fp + fn) else 0.0)
    return float(np.mean(scores))


def confusion(gold: Sequence[str], pred: Sequence[str], labels: Sequence[str]) -> pd.DataFrame:
    """Counts with gold labels as rows and predictions as columns."""
    table = pd.crosstab(pd.Categorical(gold, categories=labels), pd.Categorical(pred, categories=labels),
                        dropna=False)
    table.index.name, table.columns.name = "gold", "predicted"
    return table.reindex(index=labels, columns=labels, fill_value=0)


def expected_calibration_error(probs: np.ndarray, gold_index: np.ndarray, *, bins: int = 10) -> float:
    """ECE of the top-label confidence, equal-width bins over [0, 1].

    >>> round(expected_calibration_error(np.array([[0.9, 0.1], [0.6, 0.4]]), np.array([0, 1])), 3)
    0.35
    """
    confidence = probs.max(axis=1)
    correct = probs.argmax(axis=1) == gold_index
    edges = np.linspace(0, 1, bins + 1)
    total = 0.0
    for low, high in zip(edges[:-1], edges[1:]):
        inside = (confidence > low) & (confidence <= high) if low > 0 else (confidence >= low) & (confidence <= high)
        if inside.any():
            total += inside.mean() * abs(correct[inside].mean() - confidence[inside].mean())
    return float(total)


def paired_permutation_p(correct_a: np.ndarray, correct_b: np.ndarray, *, n_resamples: int = 20000,
                         seed: int = 0) -> float:
    """Two-sided paired permutation test of the difference in mean correctness between two models.

    Each item's pair of scores is swapped at random under the null (``scipy.stats.permutation_test``
    with ``permutation_type="samples"``).  Inputs may be per-item accuracy averaged over seeds.
    """
    a, b = np.asarray(correct_a, float), np.asarray(correct_b, float)
    if np.allclose(a, b):
        return 1.0
    result = permutation_test((a, b), seed=seed, permutation_type="samples", n_resamples=n_resamples)
    return float(result.pvalue)
