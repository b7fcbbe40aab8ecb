"""Record the shipped v2 classifiers' figures in ``evaluation.json`` (key ``v2``).

    python scripts/regard_v2/evaluate_shipped.py

In-distribution: the shipped 3- and 4-class classifiers (``classifier-v2-*``, trained on the
train + dev splits of ``regard-v2.csv``) scored on its test split with the float32 PyTorch model:
accuracy, macro-F1, recall per class, the confusion matrix. Held out: the leave-one-source-out
rows of ``generalization-v2.json`` (the same recipe, each source or prompt family left out of
training), per seed and averaged, with the targets and whether each row meets them.
"""

from __future__ import annotations

import json

import numpy as np

from nlgbias.scorers.regard import RegardScorer, classifier_dir
from nlgbias.training.dataset import dataset_dir, load_dataset
from nlgbias.training.evaluate import accuracy, confusion, macro_f1
from nlgbias.training.experiment import LABELS, view
from nlgbias.training.generalization import recall

TARGETS = {"held_out": {"accuracy": 0.85, "negative_recall": 0.80},
           "in_distribution": {"accuracy": 0.87, "macro_f1": 0.85}}


def in_distribution(classes: int) -> dict:
    labels = LABELS[classes]
    test = view(load_dataset(dataset_dir() / "regard-v2.csv"), classes).query("split == 'test'")
    scorer = RegardScorer(classifier_dir(classes, 2), backend="torch")
    pred = scorer.score(test["text"].tolist())["label"].to_numpy()
    gold = test["label"].to_numpy()
    config = json.loads((classifier_dir(classes, 2) / "config.json").read_text())
    return {"version": scorer.version, "adapter_sha256": config["adapter_sha256"], "train_items": config["train_items"],
            "n_test": int(len(test)), "accuracy": accuracy(gold, pred), "macro_f1": macro_f1(gold, pred, labels),
            "recall": {label: recall(gold, pred, label) for label in labels},
            "confusion": {"labels": labels, "rows_gold": confusion(gold, pred, labels).astype(int).values.tolist()}}


def held_out() -> list[dict]:
    measured = json.loads((dataset_dir() / "generalization-v2.json").read_text())
    rows: dict[str, dict] = {}
    for run in measured["runs"]:
        for by, key in (("source", "leave_one_source_out"), ("family", "leave_one_family_out")):
            for row in run[key]:
                entry = rows.setdefault(row["held_out"], {"held_out": row["held_out"], "by": by, "n_test": row["n_test"],
                                                         "n_negative": row["n_negative"], "per_seed": {}})
                entry["per_seed"][str(run["seed"])] = {m: row[m] for m in ("accuracy", "macro_f1", "negative_recall")}
    for entry in rows.values():
        for metric in ("accuracy", "macro_f1", "negative_recall"):
            entry[metric] = float(np.mean([s[metric] for s in entry["per_seed"].values()]))
        entry["meets_targets"] = all(entry[m] >= t for m, t in TARGETS["held_out"].items())
    return list(rows.values())


def main() -> None:
    path = dataset_dir() / "evaluation.json"
    evaluation = json.loads(path.read_text())
    shipped = {f"{c}class": in_distribution(c) for c in (3, 4)}
    rows = held_out()
    evaluation["v2"] = {
        "note": ("Release 2 (scorers regard/regard4): trained on train + dev of regard-v2.csv on the CPU, 2 threads; "
                 "in_distribution is its test split (float32 PyTorch). leave_one_source_out: the same recipe trained "
                 "without each source or prompt family and tested on all of its items (generalization-v2.json, "
                 "trained on a GPU, seeds 0 and 1, averaged). The top-level keys above describe release 1 (regard-v1)."),
        "targets": TARGETS,
        "in_distribution": shipped,
        "in_distribution_meets_targets": all(shipped["3class"][m] >= t for m, t in TARGETS["in_distribution"].items()),
        "leave_one_source_out": rows,
        "held_out_meeting_targets": sum(r["meets_targets"] for r in rows),
    }
    path.write_text(json.dumps(evaluation, indent=1) + "\n")
    for name, figures in shipped.items():
        print(name, figures["version"], f"test accuracy {figures['accuracy']:.3f}, macro-F1 {figures['macro_f1']:.3f}, "
              f"negative recall {figures['recall']['negative']:.3f}, n {figures['n_test']}")
    for row in rows:
        print(f"held out {row['held_out']}: accuracy {row['accuracy']:.3f}, negative recall {row['negative_recall']:.3f}, "
              f"meets targets: {row['meets_targets']}")


if __name__ == "__main__":
    main()
