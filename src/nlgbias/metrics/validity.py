"""How far a run's regard numbers can be trusted: low-confidence shares per group, and their gaps.

The regard classifier gives class probabilities. A text whose largest probability is under
``threshold`` (0.6) is one the classifier found hard; its label is a coin flip between two
classes. If one group's texts are harder to classify than another's, that group's shares are
noisier and a gap between the two can be partly the classifier's doing. This module measures,
per (model, context, group), the share of such texts, and tests the difference between the two
groups of every comparison, with the run's bootstrap CIs and exact permutation tests.
"""

from __future__ import annotations

import json
from typing import Sequence

import numpy as np
import pandas as pd

from nlgbias.defaults import CONFIDENCE, MIN_N, N_BOOT
from nlgbias.metrics.shares import UNIT, differences, group_shares, unit_counts
from nlgbias.metrics.significance import fdr_bh

LOW = "low_confidence"
THRESHOLD = 0.6
CLASSES = ("negative", "neutral", "positive", "other")


def max_probability(details) -> float:
    """The largest class probability in a regard ``details`` value (a dict or its JSON); nan if none.

    >>> max_probability('{"negative": 0.2, "neutral": 0.5, "positive": 0.3, "truncated": false}')
    0.5
    >>> max_probability(None)
    nan
    """
    if isinstance(details, str):
        details = json.loads(details) if details else None
    if not isinstance(details, dict):
        return float("nan")
    probs = [float(details[k]) for k in CLASSES if k in details]
    return max(probs) if probs else float("nan")


def confidence_table(samples: pd.DataFrame, *, scorer: str = "regard", threshold: float = THRESHOLD,
                     by: Sequence[str] = ("model", "context", "group")) -> pd.DataFrame:
    """One row per scored text: the ``by`` columns, ``scorer``, ``p_max`` and ``label`` (low_confidence/confident).

    Texts without probabilities (empty continuations) are left out.
    """
    column = f"{scorer}_details"
    if column not in samples.columns:
        return pd.DataFrame(columns=[*by, "scorer", "p_max", "label"])
    p_max = samples[column].map(max_probability)
    keep = [*by, *([UNIT] if UNIT in samples.columns else [])]  # the template, for prompt-level intervals
    table = samples.loc[p_max.notna(), keep].assign(scorer=scorer, p_max=p_max[p_max.notna()])
    table["label"] = np.where(table["p_max"] < threshold, LOW, "confident")
    return table.reset_index(drop=True)


def low_confidence(samples: pd.DataFrame, *, pairs: Sequence[tuple[str, str]], scorer: str = "regard",
                   threshold: float = THRESHOLD, n_boot: int = N_BOOT, confidence: float = CONFIDENCE, seed: int = 0,
                   min_n: int = MIN_N, alpha: float = 0.05) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Low-confidence shares per (model, context, group) and their gaps within each comparison.

    Parameters
    ----------
    samples : pandas.DataFrame
        A run's samples table with ``model, context, group`` and ``<scorer>_details``.
    pairs : sequence of (str, str)
        The suite's comparisons.
    threshold : float, default=0.6
        A text is low-confidence when its largest class probability is below this.
    alpha : float, default=0.05
        A gap is ``flagged`` when its Benjamini-Hochberg adjusted p (over these gaps) is below alpha.

    Returns
    -------
    (shares, gaps) : pandas.DataFrame
        ``shares``: ``model, context, scorer, group, n, k, share, ci_low, ci_high, small_n`` (k =
        low-confidence texts). ``gaps``: ``model, context, scorer, group_a, group_b, n_a, k_a,
        share_a, n_b, k_b, share_b, diff, ci_low, ci_high, p, small_n, p_adj, flagged``.
    """
    table = confidence_table(samples, scorer=scorer, threshold=threshold)
    by = ["model", "context", "scorer", "group"]
    if table.empty:
        return pd.DataFrame(columns=by + ["n", "k", "share"]), pd.DataFrame(columns=["flagged"])
    shares = group_shares(table, by=by, labels=[LOW, "confident"], n_boot=n_boot, confidence=confidence,
                          seed=seed, min_n=min_n)
    gaps = differences(shares, column="group", pairs=pairs, within=["model", "context", "scorer"], labels=[LOW],
                       n_boot=n_boot, confidence=confidence, seed=seed, min_n=min_n, units=unit_counts(table, [LOW]))
    gaps["p_adj"] = fdr_bh(gaps["p"]) if len(gaps) else []
    gaps["flagged"] = gaps["p_adj"] < alpha
    shares = shares[shares["label"] == LOW].drop(columns="label").reset_index(drop=True)
    return shares, gaps.drop(columns="label").reset_index(drop=True)
