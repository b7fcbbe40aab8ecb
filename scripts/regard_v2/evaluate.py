"""Leave-one-source-out figures for the regard v2 data (the shipped recipe, one seed).

    python scripts/regard_v2/evaluate.py --data src/nlgbias/data/regard/regard-v2.csv --out loso.json [--device cuda]

For each column in ``--by`` (default: ``source`` = model and decoding, ``family`` = prompt family),
trains the MiniLM classifier with the shipped settings without each value and tests it on all of
that value's items; also trains on train + dev and tests on the test split (in-distribution).
Writes one JSON file with every row and prints a table.
"""

from __future__ import annotations

import argparse
import json
import time
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from nlgbias.training.evaluate import accuracy, macro_f1
from nlgbias.training.experiment import LABELS, MiniLMClassifier, view
from nlgbias.training.generalization import leave_one_source_out, recall


def in_distribution(data: pd.DataFrame, *, classes: int, device: str, seed: int) -> dict:
    """Train on train + dev, test on the test split: the in-distribution figures."""
    labels = LABELS[classes]
    table = view(data, classes)
    fit, test = table[table["split"].isin(["train", "dev"])], table[table["split"] == "test"]
    model = MiniLMClassifier(labels, device=device).fit(fit["text"].tolist(), fit["label"].tolist(), seed=seed)
    pred = np.array(labels)[model.predict_proba(test["text"].tolist()).argmax(axis=1)]
    return {"n_train": int(len(fit)), "n_test": int(len(test)), "accuracy": accuracy(test["label"], pred),
            "macro_f1": macro_f1(test["label"], pred, labels), "negative_recall": recall(test["label"], pred, "negative")}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--by", nargs="+", default=["source", "family"])
    parser.add_argument("--classes", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit", type=int, default=0, help="Use only this many items (a smoke test).")
    args = parser.parse_args()
    data = pd.read_csv(args.data, keep_default_na=False, na_values=[""])
    if args.limit:
        data = data.sample(args.limit, random_state=0)
    started = time.time()
    result = {"classes": args.classes, "seed": args.seed, "device": args.device,
              "in_distribution": in_distribution(data, classes=args.classes, device=args.device, seed=args.seed)}
    print("in-distribution", result["in_distribution"], flush=True)
    for column in args.by:
        table = leave_one_source_out(data, by=column, classes=args.classes, seed=args.seed,
                                     make_model=lambda labels: MiniLMClassifier(labels, device=args.device),
                                     progress=partial(print, column, flush=True))
        result[f"leave_one_{column}_out"] = table.to_dict("records")
    result["seconds"] = round(time.time() - started, 1)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
