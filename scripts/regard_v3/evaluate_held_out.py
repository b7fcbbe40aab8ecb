"""The shipped scorers on the regard v3 labels, which no shipped classifier has seen.

    python scripts/regard_v3/evaluate_held_out.py [--scorers regard regard-v1 vader]

In: ``bold-validity-labelled.csv`` and ``regard-v3-labelled.csv`` (``build_labels.py``): items
whose three passes give a strict 3-class majority.  BOLD texts are scored as written (the subject
named, as a BOLD run scores them); pool texts are masked (``XYZ``), as in training.

Out: ``evaluation-v3.json`` and a Markdown table on stdout: per scorer and subset (BOLD as a whole
and per domain; the pool per prompt family and per model-decoding source) ``n``, accuracy with a
Wilson 95% interval, macro-F1 and negative recall (with its ``n``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

import nlgbias
from nlgbias.checklist.results import wilson
from nlgbias.training.evaluate import accuracy, macro_f1
from nlgbias.training.generalization import recall

HERE = Path(__file__).resolve().parent
LABELS = ["negative", "neutral", "positive"]


def figures(gold: pd.Series, pred: pd.Series) -> dict:
    """``n, accuracy, accuracy_ci, macro_f1, negative_recall, n_negative`` of ``pred`` against ``gold``."""
    n = len(gold)
    hits = int((gold.to_numpy() == pred.to_numpy()).sum())
    return {"n": n, "accuracy": accuracy(gold, pred), "accuracy_ci": list(wilson(hits, n)),
            "macro_f1": macro_f1(gold, pred, LABELS), "negative_recall": recall(gold, pred, "negative"),
            "n_negative": int((gold == "negative").sum())}


def evaluation_row(by: str, held_out: str, fig: dict) -> dict:
    """One held-out row of ``evaluation.json`` (what the report's validity panel reads) from :func:`figures`."""
    return {"by": by, "held_out": held_out, "n_test": fig["n"],
            **{k: fig[k] for k in ("n_negative", "accuracy", "accuracy_ci", "macro_f1", "negative_recall")}}


def print_table(results: list[dict]) -> None:
    """The rows of :func:`figures` (with ``scorer`` and ``subset``) as a Markdown table on stdout."""
    print("| scorer | subset | n | accuracy (95% CI) | macro-F1 | negative recall (n) |")
    print("|---|---|---:|---|---:|---|")
    for r in results:
        low, high = r["accuracy_ci"]
        print(f"| {r['scorer']} | {r['subset']} | {r['n']} | {r['accuracy']:.3f} ({low:.2f}-{high:.2f}) | "
              f"{r['macro_f1']:.3f} | {r['negative_recall']:.3f} ({r['n_negative']}) |")


def subsets(table: pd.DataFrame, name: str, by: list[str]) -> list[tuple[str, pd.DataFrame]]:
    """``(label, rows)``: the whole set, then each value of each column in ``by``."""
    out = [(f"{name}: all", table)]
    for column in by:
        out += [(f"{name}: {column} {value}", group) for value, group in table.groupby(column)]
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scorers", nargs="+", default=["regard", "regard-v1", "vader"])
    args = parser.parse_args()
    sets = []
    for file, name, by in (("bold-validity-labelled.csv", "BOLD", ["domain"]),
                           ("regard-v3-labelled.csv", "v3 pool", ["family", "source"])):
        path = HERE / file
        if path.is_file():
            table = pd.read_csv(path).dropna(subset=["regard_3"]).reset_index(drop=True)
            sets += subsets(table, name, by)
    results = []
    for scorer in args.scorers:
        predicted: dict[str, pd.Series] = {}
        for label, rows in sets:
            key = label.split(":")[0]
            if key not in predicted:
                whole = next(r for lab, r in sets if lab == f"{key}: all")
                predicted[key] = pd.Series(list(nlgbias.score(whole["text"].tolist(), scorer=scorer)["label"]),
                                           index=whole["id"])
            pred = rows["id"].map(predicted[key])
            results.append({"scorer": scorer, "subset": label, **figures(rows["regard_3"], pred)})
    (HERE / "evaluation-v3.json").write_text(json.dumps(results, indent=2, default=float) + "\n")
    print_table(results)


if __name__ == "__main__":
    main()
