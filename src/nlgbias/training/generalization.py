"""Leave-one-source-out evaluation: does the regard classifier hold on text from a source it never saw?

A *source* is a value of a column of the dataset (``source``: a model and decoding, e.g.
``smollm2/hot``; ``family``: a prompt family, e.g. ``news``). For each value, a classifier is trained
on the fit splits (train + dev) of every other value and tested on *every* item of the held-out
value, whatever its split: nothing of that source was seen in training.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import pandas as pd

from nlgbias.training.baselines import Classifier
from nlgbias.training.evaluate import accuracy, macro_f1
from nlgbias.training.experiment import LABELS, MiniLMClassifier, view


def recall(gold: Sequence[str], pred: Sequence[str], label: str) -> float:
    """Share of the items whose gold label is ``label`` that were predicted as ``label`` (nan if none).

    >>> recall(["negative", "negative", "neutral"], ["negative", "neutral", "neutral"], "negative")
    0.5
    """
    mask = np.asarray(gold) == label
    hits = np.asarray(pred)[mask] == label
    return float(hits.mean()) if mask.any() else float("nan")


def leave_one_source_out(data: pd.DataFrame, *, by: str = "source", classes: int = 3, seed: int = 0,
                         fit_splits: Sequence[str] = ("train", "dev"),
                         make_model: Callable[[list[str]], Classifier] | None = None, progress=None) -> pd.DataFrame:
    """Train without each value of ``by`` and test on all of its items.

    Parameters
    ----------
    data : pandas.DataFrame
        The annotated dataset (``regard-v2.csv``): ``text``, ``split``, ``regard_<classes>`` and ``by``.
    by : str, default="source"
        The column whose values are held out one at a time.
    classes : {3, 4}
    make_model : callable, optional
        ``labels -> model`` with ``fit(texts, labels, seed)`` and ``predict_proba(texts)``; the
        MiniLM classifier with the shipped settings by default.

    Returns
    -------
    pandas.DataFrame
        One row per held-out value: ``held_out, n_train, n_test, accuracy, macro_f1,
        negative_recall, n_negative``.
    """
    labels = LABELS[classes]
    table = view(data, classes).join(data[[by]])
    make_model = make_model or (lambda names: MiniLMClassifier(names))
    rows = []
    for value in sorted(table[by].dropna().unique()):
        train = table[(table[by] != value) & table["split"].isin(fit_splits)]
        test = table[table[by] == value]
        model = make_model(labels).fit(train["text"].tolist(), train["label"].tolist(), seed=seed)
        pred = np.array(labels)[model.predict_proba(test["text"].tolist()).argmax(axis=1)]
        rows.append({"held_out": value, "n_train": int(len(train)), "n_test": int(len(test)),
                     "accuracy": accuracy(test["label"], pred), "macro_f1": macro_f1(test["label"], pred, labels),
                     "negative_recall": recall(test["label"], pred, "negative"),
                     "n_negative": int((test["label"] == "negative").sum())})
        if progress:
            progress(rows[-1])
    return pd.DataFrame(rows)
