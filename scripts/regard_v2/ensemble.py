"""Does an ensemble pay for its cost? The fine-tuned MiniLM classifier averaged with an mpnet probe.

    python scripts/regard_v2/ensemble.py --mpnet DIR [--by source family] [--out ensemble-v2.json]

The strongest frozen encoder of ``compare_encoders.py`` is all-mpnet-base-v2 (its probe is 5 points
above MiniLM's on dev, at a seventh of the speed). This script measures the ensemble
``w * P(MiniLM fine-tuned) + (1 - w) * P(mpnet probe)``, 3-class view of ``regard-v2.csv``:

1. **dev** (the choice): both trained on train, scored on dev, ``w`` from 0 to 1 in steps of 0.1;
   the ``w`` with the best dev macro-F1 is kept (``w = 1`` is MiniLM alone).
2. **in-distribution test**: the shipped v2 classifier (trained on train + dev) and a probe trained
   on train + dev, scored on test.
3. **leave-one-source-out** for each column of ``--by``: both trained on train + dev of the other
   sources (MiniLM with the shipped recipe, seed 0, on this CPU), tested on every item of the
   held-out one; MiniLM alone and the ensemble side by side.

Writes one JSON file (rewritten after every step) and prints each row.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from compare_encoders import Probe, embed, figures, load

from nlgbias.scorers.regard import RegardScorer, classifier_dir
from nlgbias.training.dataset import dataset_dir, load_dataset
from nlgbias.training.experiment import LABELS, MiniLMClassifier, view

WEIGHTS = [round(w, 1) for w in np.arange(0, 1.01, 0.1)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mpnet", type=Path, required=True, help="The unzipped all-mpnet-base-v2 folder.")
    parser.add_argument("--by", nargs="+", default=["source"])
    parser.add_argument("--c", type=float, default=0.01, help="The probe's C (chosen on dev by compare_encoders.py).")
    parser.add_argument("--out", type=Path, default=dataset_dir() / "ensemble-v2.json")
    args = parser.parse_args()
    labels = LABELS[3]
    data = load_dataset(dataset_dir() / "regard-v2.csv")
    table = view(data, 3).join(data[args.by])
    torch.set_num_threads(2)
    tokenizer, model = load("mpnet", args.mpnet)
    texts = sorted(set(table["text"]))
    vectors = dict(zip(texts, embed(tokenizer, model, texts)))
    result: dict = {"description": __doc__.split("\n\n")[2].replace("\n", " "), "c": args.c}

    def save(step: str, row) -> None:
        print(step, json.dumps(row), flush=True)
        args.out.write_text(json.dumps(result, indent=1) + "\n")

    def both(fit: pd.DataFrame, test: pd.DataFrame, minilm_probs=None):
        if minilm_probs is None:
            minilm = MiniLMClassifier(labels).fit(fit["text"].tolist(), fit["label"].tolist(), seed=0)
            minilm_probs = minilm.predict_proba(test["text"].tolist())
        probe = Probe(labels, vectors, args.c).fit(fit["text"].tolist(), fit["label"].tolist())
        return minilm_probs, probe.predict_proba(test["text"].tolist())

    def scored(gold, probs) -> dict:
        return figures(gold, np.array(labels)[probs.argmax(axis=1)], labels)

    started = time.time()
    train, dev, test = (table[table["split"] == s] for s in ("train", "dev", "test"))
    m, p = both(train, dev)
    result["dev"] = {str(w): scored(dev["label"], w * m + (1 - w) * p) for w in WEIGHTS}
    w = max(WEIGHTS, key=lambda x: (result["dev"][str(x)]["macro_f1"], x))
    result["weight"] = w
    save("dev", {"weight": w, "minilm": result["dev"]["1.0"], "ensemble": result["dev"][str(w)]})

    shipped = RegardScorer(classifier_dir(3, 2), backend="torch")
    details = shipped.score(test["text"].tolist())["details"]
    shipped_probs = np.array([[d[label] for label in labels] for d in details])
    m, p = both(table[table["split"].isin(["train", "dev"])], test, shipped_probs)
    result["in_distribution"] = {"n_test": int(len(test)), "minilm": scored(test["label"], m),
                                 "mpnet_probe": scored(test["label"], p), "ensemble": scored(test["label"], w * m + (1 - w) * p)}
    save("in-distribution", result["in_distribution"])

    for column in args.by:
        rows = result.setdefault(f"leave_one_{column}_out", [])
        for value in sorted(table[column].dropna().unique()):
            held = table[table[column] == value]
            fit = table[(table[column] != value) & table["split"].isin(["train", "dev"])]
            m, p = both(fit, held)
            rows.append({"held_out": value, "n_train": int(len(fit)), "n_test": int(len(held)),
                         "n_negative": int((held["label"] == "negative").sum()), "minilm": scored(held["label"], m),
                         "mpnet_probe": scored(held["label"], p), "ensemble": scored(held["label"], w * m + (1 - w) * p)})
            save(f"{column} {value}", rows[-1])
    result["seconds"] = round(time.time() - started)
    save("done", {"seconds": result["seconds"]})


if __name__ == "__main__":
    main()
