"""Choose generations for annotation: per cell, k positive and k negative by VADER (as the paper).

Sheng et al. chose, for each prefix template, three positive and three negative samples by
VADER sentiment "to choose a diverse and roughly balanced set"; the group mention is masked
with ``XYZ`` and the masked texts are deduplicated before annotation.
"""

from __future__ import annotations

import hashlib
import re
from typing import Sequence

import numpy as np
import pandas as pd

from nlgbias.keys import cell_seed
from nlgbias.metrics.validity import THRESHOLD, max_probability

ITEM_COLUMNS = ["id", "text", "context", "template_id", "group", "model", "vader_label", "generation_id"]


def normalise(text: str) -> str:
    """Lower-case, collapse spaces, drop trailing punctuation: the key used to spot duplicates.

    >>> normalise("XYZ  worked as a Nurse. ") == normalise("xyz worked as a nurse")
    True
    """
    return re.sub(r"[\s.!?,;:'\"]+$", "", re.sub(r"\s+", " ", text.strip().lower()))


def item_id(text: str) -> str:
    """Stable id of an annotation item, from its normalised text."""
    return "i" + hashlib.sha256(normalise(text).encode("utf-8")).hexdigest()[:10]


def hard_examples(samples: pd.DataFrame, *, scorer: str = "regard", threshold: float = THRESHOLD, k: int = 3,
                  by: Sequence[str] = ("model", "context", "group"), seed: int = 0) -> pd.DataFrame:
    """Up to ``k`` low-confidence samples per ``by`` cell, chosen at random (seeded, independent of row
    order): the samples' rows with ``p_max`` and ``label`` (the scorer's label) added."""
    column = f"{scorer}_details"
    if column not in samples.columns:
        return samples.iloc[0:0].assign(p_max=[], label=[])
    p_max = samples[column].map(max_probability)
    hard = samples[p_max < threshold].assign(p_max=p_max, label=samples[f"{scorer}_label"])
    hard = hard.sort_values("generation_id", kind="stable")
    hard = hard.assign(_draw=np.random.default_rng(seed).random(len(hard))).sort_values("_draw", kind="stable")
    picked = hard.groupby(list(by), sort=False).head(k).sort_values([*by, "generation_id"])
    return picked.drop(columns="_draw").reset_index(drop=True)


def low_confidence_sample(samples: pd.DataFrame, *, k: int = 10, threshold: float = 0.6, scorer: str = "regard",
                          by: Sequence[str] = ("model", "template_id", "group"), seed: int = 0) -> pd.DataFrame:
    """Pick up to ``k`` texts per cell that the regard classifier scored with low confidence.

    A text is low-confidence when its largest class probability is under ``threshold``: these
    are the texts of *your* model that the shipped classifier finds hard, the ones worth
    labelling to check it (``annotate import``) or to retrain it (``train-regard --extra-data``).

    Returns
    -------
    pandas.DataFrame
        The columns of :func:`annotation_sample` plus ``p_max``; one row per distinct masked text.
    """
    picked = hard_examples(samples, scorer=scorer, threshold=threshold, k=k, by=by, seed=seed)
    picked = picked[~picked.get("is_empty", pd.Series(False, index=picked.index)).astype(bool)]
    table = picked.assign(text=picked["scored_text"],
                          vader_label=picked["vader_label"] if "vader_label" in picked else "")
    if "model" not in table.columns:
        table["model"] = ""
    table["id"] = table["text"].map(item_id)
    return table.drop_duplicates("id", keep="first")[ITEM_COLUMNS + ["p_max"]].reset_index(drop=True)


def annotation_sample(samples: pd.DataFrame, *, k_positive: int = 3, k_negative: int = 3, k_neutral: int = 0,
                      by: Sequence[str] = ("model", "template_id", "group"), seed: int = 0,
                      text_column: str = "scored_text", label_column: str = "vader_label") -> pd.DataFrame:
    """Pick up to k samples of each VADER label per cell; mask; drop duplicate texts.

    Parameters
    ----------
    samples : pandas.DataFrame
        A run's samples table (``samples.parquet``): needs the ``by`` columns, ``context``,
        ``generation_id``, the masked ``text_column`` and the VADER ``label_column``.
    k_positive, k_negative, k_neutral : int
        Samples to draw per cell and label (fewer when a cell has fewer).
    by : sequence of str
        What a cell is.  The paper used (template, group); with several models, add ``model``.
    seed : int

    Returns
    -------
    pandas.DataFrame
        ``id, text, context, template_id, group, model, vader_label, generation_id``; one row per
        distinct normalised text, in cell order.  Samples whose scored text is just the prompt
        (an empty continuation) are skipped.
    """
    wanted = {"positive": k_positive, "negative": k_negative, "neutral": k_neutral}
    picked = []
    for key, cell in samples.groupby(list(by), sort=False):
        key = key if isinstance(key, tuple) else (key,)
        cell = cell[~cell.get("is_empty", pd.Series(False, index=cell.index)).astype(bool)]
        cell = cell.sort_values("generation_id")
        for label, k in wanted.items():
            pool = cell[cell[label_column] == label]
            if k <= 0 or pool.empty:
                continue
            rng = np.random.default_rng(cell_seed(seed, *key, label))
            chosen = rng.choice(len(pool), size=min(k, len(pool)), replace=False)
            picked.append(pool.iloc[np.sort(chosen)])
    if not picked:
        return pd.DataFrame(columns=ITEM_COLUMNS)
    table = pd.concat(picked, ignore_index=True)
    table = table.assign(text=table[text_column], vader_label=table[label_column])
    if "model" not in table.columns:
        table["model"] = ""
    table["id"] = table["text"].map(item_id)
    table = table.drop_duplicates("id", keep="first")
    return table[ITEM_COLUMNS].reset_index(drop=True)
