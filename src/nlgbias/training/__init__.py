"""Training the regard classifier from the annotated data, and comparing it with baselines."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd

from nlgbias.training.dataset import dataset_dir, load_dataset
from nlgbias.training.evaluate import accuracy, macro_f1
from nlgbias.training.experiment import LABELS, view

SETTINGS = {"epochs": 6, "batch_size": 16, "lr": 1e-3, "rank": 8, "alpha": 16.0, "weight_decay": 0.01}
VERSION = "1"


def build_classifier(data: pd.DataFrame, out: str | Path, *, classes: int = 3, seed: int = 0) -> dict:
    """Train on the train split, report dev figures, write the classifier to ``out``.

    Returns
    -------
    dict
        ``n_train, dev_accuracy, dev_macro_f1, adapter_sha256, identical_to_shipped``.
    """
    from nlgbias.scorers.regard_model import save_classifier
    from nlgbias.training.train import TRAIN_THREADS, predict_proba, train_classifier

    labels = LABELS[classes]
    table = view(data, classes)
    train, dev = table[table["split"] == "train"], table[table["split"] == "dev"]
    tokenizer, model = train_classifier(train["text"].tolist(), train["label"].tolist(), label_names=labels,
                                        seed=seed, **SETTINGS)
    pred = np.array(labels)[predict_proba(model, tokenizer, dev["text"].tolist()).argmax(axis=1)]
    data_hash = hashlib.sha256(pd.util.hash_pandas_object(table, index=False).values.tobytes()).hexdigest()
    meta = {"version": VERSION, "classes": classes, "seed": seed, "settings": SETTINGS, "threads": TRAIN_THREADS,
            "train_items": int(len(train)), "data_sha256": data_hash,
            "dev_accuracy": accuracy(dev["label"], pred), "dev_macro_f1": macro_f1(dev["label"], pred, labels)}
    folder = save_classifier(model, out, meta)
    digest = hashlib.sha256((folder / "adapter.safetensors").read_bytes()).hexdigest()
    shipped = dataset_dir() / f"classifier-{classes}class" / "adapter.safetensors"
    identical = shipped.is_file() and hashlib.sha256(shipped.read_bytes()).hexdigest() == digest
    config_path = folder / "config.json"
    config = json.loads(config_path.read_text())
    config["adapter_sha256"] = digest
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    return {"n_train": int(len(train)), "dev_accuracy": meta["dev_accuracy"], "dev_macro_f1": meta["dev_macro_f1"],
            "adapter_sha256": digest, "identical_to_shipped": identical}


__all__ = ["SETTINGS", "build_classifier", "dataset_dir", "load_dataset"]
