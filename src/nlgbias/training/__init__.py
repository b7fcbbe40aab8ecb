"""Training the regard classifier from the annotated data, and comparing it with baselines."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nlgbias.errors import InputError
from nlgbias.scorers.regard import RELEASE, Regard4Scorer, Regard4V1Scorer, RegardScorer, RegardV1Scorer, classifier_dir
from nlgbias.training.dataset import dataset_dir, load_dataset
from nlgbias.training.evaluate import accuracy, macro_f1
from nlgbias.training.experiment import LABELS, SETTINGS, view

FIT_SPLITS = ("train", "dev")
VERSION = str(RELEASE)  # the release `train-regard` builds by default, on that release's data


def build_classifier(data: pd.DataFrame, out: str | Path, *, classes: int = 3, seed: int = 0,
                     fit_splits: tuple[str, ...] = FIT_SPLITS, epochs: int | None = None,
                     version: str = VERSION) -> dict:
    """Train the shipped recipe on ``fit_splits`` (train + dev), report test figures, write it to ``out``.

    The settings were chosen on dev with models trained on train alone (``compare_models``);
    the shipped model then learns from train and dev, and the test split, never used for a
    choice, measures it.

    Returns
    -------
    dict
        ``n_train, n_test, test_accuracy, test_macro_f1, adapter_sha256, identical_to_shipped``
        (the test figures are NaN when the test split is empty; ``identical_to_shipped`` is the
        name of the shipped scorer whose adapter is byte-identical, ``regard`` or ``regard-v1``
        for 3 classes, or None).
    """
    from nlgbias.scorers.regard_model import load_classifier, save_classifier
    from nlgbias.training.train import TRAIN_THREADS, predict_proba, train_classifier

    labels = LABELS[classes]
    shipped: dict[str, str] = {}  # adapter digest -> scorer name, read before writing, in case ``out`` is a shipped folder
    for scorer in (RegardScorer, Regard4Scorer, RegardV1Scorer, Regard4V1Scorer):  # the default names first
        shipped_file = classifier_dir(scorer.classes, scorer.release) / "adapter.safetensors"
        if scorer.classes == classes and shipped_file.is_file():
            shipped.setdefault(hashlib.sha256(shipped_file.read_bytes()).hexdigest(), scorer.name)

    table = view(data, classes)
    train, test = table[table["split"].isin(fit_splits)], table[table["split"] == "test"]
    if train.empty:
        raise InputError(f"no item has a regard_{classes} label in the {' or '.join(fit_splits)} split: "
                         "nothing to train on")
    settings: dict[str, Any] = {**SETTINGS, **({"epochs": epochs} if epochs is not None else {})}
    tokenizer, model = train_classifier(train["text"].tolist(), train["label"].tolist(), label_names=labels,
                                        seed=seed, **settings)
    data_hash = hashlib.sha256(pd.util.hash_pandas_object(table, index=False).values.tobytes()).hexdigest()
    meta = {"version": version, "classes": classes, "seed": seed, "settings": settings, "threads": TRAIN_THREADS,
            "fit_splits": list(fit_splits), "train_items": int(len(train)), "data_sha256": data_hash}
    folder = save_classifier(model, out, meta)
    tokenizer, saved, _ = load_classifier(folder)  # measure what is saved (int8 layer deltas), not the float model
    pred = np.array(labels)[predict_proba(saved, tokenizer, test["text"].tolist()).argmax(axis=1)]
    meta_test = {"test_accuracy": accuracy(test["label"], pred),
                 "test_macro_f1": macro_f1(test["label"], pred, labels) if len(test) else float("nan")}
    digest = hashlib.sha256((folder / "adapter.safetensors").read_bytes()).hexdigest()
    config_path = folder / "config.json"
    config = json.loads(config_path.read_text())
    config.update(meta_test)
    config["adapter_sha256"] = digest
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    return {"n_train": int(len(train)), "n_test": int(len(test)), **meta_test, "adapter_sha256": digest,
            "identical_to_shipped": shipped.get(digest)}


__all__ = ["SETTINGS", "build_classifier", "dataset_dir", "load_dataset"]
