"""The shipped regard classifier against your annotators: accuracy and confusion on your own texts.

``annotate import`` runs it on the majority labels it has just computed: the registry's ``regard``
scorer (3 classes) against the 3-class majority, ``regard4`` against the 4-class majority.  The
scorers are looked up by name in :mod:`nlgbias.scorers`, so whichever classifier ships under
that name is the one checked.
"""

from __future__ import annotations

import pandas as pd

from nlgbias.errors import ScorerUnavailable
from nlgbias.scorers import get_scorer

CHECKS = (("regard", "regard", 3), ("regard4", "regard", 4))  # (scorer, label column, classes)


def classifier_agreement(predicted: pd.Series, annotated: pd.Series, labels: list[str]) -> dict:
    """Accuracy and confusion matrix of classifier labels against majority labels (same index).

    Returns
    -------
    dict
        ``n, correct, accuracy, labels, confusion``: ``confusion[i][j]`` counts items annotated
        ``labels[i]`` that the classifier labelled ``labels[j]``.

    >>> r = classifier_agreement(pd.Series(["positive", "neutral", "neutral"]),
    ...                          pd.Series(["positive", "negative", "neutral"]), ["negative", "neutral", "positive"])
    >>> r["accuracy"], r["confusion"]
    (0.6666666666666666, [[0, 1, 0], [0, 1, 0], [0, 0, 1]])
    """
    index = {label: i for i, label in enumerate(labels)}
    confusion = [[0] * len(labels) for _ in labels]
    for p, a in zip(predicted, annotated):
        confusion[index[a]][index[p]] += 1
    n = len(annotated)
    correct = sum(confusion[i][i] for i in range(len(labels)))
    return {"n": n, "correct": correct, "accuracy": correct / n if n else float("nan"), "labels": list(labels),
            "confusion": confusion}


def classifier_check(items: pd.DataFrame, majority: dict[tuple[str, int], pd.DataFrame]) -> tuple[list[dict], pd.DataFrame]:
    """Score the items' texts with each registered regard scorer and compare with the majority labels.

    Parameters
    ----------
    items : pandas.DataFrame
        ``id, text`` (the masked texts the annotators saw).
    majority : dict
        ``(column, classes) -> adjudicated table`` (``id, label``; ``"tie"`` rows are left out).

    Returns
    -------
    (list of dict, pandas.DataFrame)
        Per scorer: ``scorer, version, task`` and :func:`classifier_agreement`'s figures, or
        ``scorer, task, skipped`` (why it could not run here); and one row per compared item:
        ``scorer, task, id, text, annotated, predicted, correct``.
    """

    results, rows = [], []
    texts = items.set_index("id")["text"]
    for name, column, classes in CHECKS:
        task = f"{column}-{classes}class"
        try:
            scorer = get_scorer(name)
        except ScorerUnavailable as exc:
            results.append({"scorer": name, "task": task, "skipped": str(exc)})
            continue
        table = majority[(column, classes)]
        table = table[table["label"] != "tie"]
        predicted = [label or "none" for label in scorer.score(texts.loc[table["id"]].tolist())["label"]]
        labels = list(getattr(scorer, "labels", ()))
        labels += sorted((set(table["label"]) | set(predicted)) - set(labels))
        figures = classifier_agreement(pd.Series(predicted), table["label"].reset_index(drop=True), labels)
        results.append({"scorer": name, "version": getattr(scorer, "version", ""), "task": task, **figures})
        rows.append(pd.DataFrame({"scorer": name, "task": task, "id": table["id"].to_numpy(),
                                  "text": texts.loc[table["id"]].to_numpy(), "annotated": table["label"].to_numpy(),
                                  "predicted": predicted}))
    columns = ["scorer", "task", "id", "text", "annotated", "predicted"]
    compared = pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=columns)
    compared["correct"] = compared["annotated"] == compared["predicted"]
    return results, compared


def confusion_text(result: dict) -> list[str]:
    """The confusion matrix as aligned lines: annotated labels down, classifier labels across.

    >>> print("\\n".join(confusion_text({"labels": ["neg", "pos"], "confusion": [[3, 1], [0, 12]]})))
    annotated \\ classifier  neg  pos
    neg                       3    1
    pos                       0   12
    """
    labels = result["labels"]
    corner = "annotated \\ classifier"
    first = max(len(corner), *(len(label) for label in labels))
    widths = [max(len(label), 3) for label in labels]
    lines = [corner.ljust(first) + "".join(f"  {label:>{w}}" for label, w in zip(labels, widths))]
    for label, row in zip(labels, result["confusion"]):
        lines.append(label.ljust(first) + "".join(f"  {n:>{w}}" for n, w in zip(row, widths)))
    return lines


__all__ = ["CHECKS", "classifier_agreement", "classifier_check", "confusion_text"]
