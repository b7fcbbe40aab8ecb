"""A candidate classifier trained on the v3 table, beside the shipped release, on text neither trained on.

    python scripts/regard_v3/evaluate_candidate.py --classifier build/regard-v3/clf3 \
        --data build/regard-v3/regard-v3.csv [--json build/regard-v3/candidate.json]

In: a ``train-regard`` folder trained on ``--data`` (``build_dataset.py``), whose test split the candidate
never saw; ``bold-validity-labelled.csv`` (never trained on by either).  Out: a Markdown table on
stdout (and ``--json``): per scorer (the candidate, shipped ``regard``) and subset (the v3 pool's test
items per family, regard v2's test items, BOLD validity) ``n``, accuracy with a Wilson 95% interval,
macro-F1, negative recall.  The shipped release trained on regard v2's train and dev splits only, so
every subset but regard v2's test items is new text to it as well.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

import nlgbias
from evaluate_held_out import figures, print_table  # same folder
from nlgbias.training.dataset import dataset_dir, load_dataset

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--classifier", type=Path, required=True)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    table = pd.read_csv(args.data).dropna(subset=["regard_3"])
    test = table[table["split"] == "test"]
    bold = pd.read_csv(HERE / "bold-validity-labelled.csv").dropna(subset=["regard_3"])
    pool_ids = set(pd.read_csv(HERE / "regard-v3-labelled.csv")["id"])
    v2_ids = set(load_dataset(dataset_dir() / "regard-v2.csv")["id"])
    pool_test = test[test["id"].isin(pool_ids)]
    subsets = [(f"v3 pool test, {family}", rows) for family, rows in pool_test.groupby("family")]
    subsets += [("v3 pool test, all", pool_test), ("regard v2 test", test[test["id"].isin(v2_ids)]),
                ("BOLD validity", bold)]
    texts = list(dict.fromkeys(t for _, rows in subsets for t in rows["text"]))
    results = []
    for name, scorer in (("candidate", f"regard:{args.classifier}"), ("regard (release 2)", "regard")):
        labels = dict(zip(texts, nlgbias.score(texts, scorer=scorer)["label"]))
        for subset, rows in subsets:
            results.append({"scorer": name, "subset": subset,
                            **figures(rows["regard_3"].reset_index(drop=True), rows["text"].map(labels).reset_index(drop=True))})
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=float) + "\n")
    print_table(results)


if __name__ == "__main__":
    main()
