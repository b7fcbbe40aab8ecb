"""Training the regard classifier from the annotated data, and comparing it with baselines."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nlgbias.errors import InputError
from nlgbias.scorers.regard import (RELEASE, Regard4Scorer, Regard4V1Scorer, Regard4V2Scorer, RegardScorer, RegardV1Scorer,
                                    RegardV2Scorer, RegardV3Scorer, classifier_dir, shipped_release)
from nlgbias.training.dataset import OWN_TEST, dataset_dir, extra_counts, load_dataset
from nlgbias.training.evaluate import accuracy, macro_f1
from nlgbias.training.experiment import LABELS, SETTINGS, view
from nlgbias.submodules import lazy_submodules

FIT_SPLITS = ("train", "dev")
DISTILL_EPOCHS = 2  # with a teacher's soft labels the set is 2-3 times larger: half the epochs
VERSION = str(RELEASE)  # the release `train-regard` builds by default, on that release's data


def build_classifier(data: pd.DataFrame, out: str | Path, *, classes: int = 3, seed: int = 0,
                     fit_splits: tuple[str, ...] = FIT_SPLITS, epochs: int | None = None,
                     version: str = VERSION, progress=None, soft: pd.DataFrame | None = None) -> dict:
    """Train the shipped recipe on ``fit_splits`` (train + dev), report test figures, write it to ``out``.

    The settings were chosen on dev with models trained on train alone (``compare_models``);
    the shipped model then learns from train and dev, and the test split, never used for a
    choice, measures it.  Items in split :data:`~nlgbias.training.dataset.OWN_TEST` (the user's
    held-out ``--extra-data`` items) are measured on their own, by this classifier and by the
    shipped one of the same classes, and listed with both predictions in ``out/own_test.csv``.

    ``soft``: unannotated texts with a teacher's probabilities (``text`` and ``p_<label>`` per label,
    3 classes only), learned beside the annotated items (knowledge distillation, see
    :func:`~nlgbias.training.train.train_classifier`); the recipe then runs ``DISTILL_EPOCHS`` epochs
    over the larger set unless ``epochs`` says otherwise.

    ``progress(desc, total, unit)``: a progress bar factory (``update(n)``, ``close()``), e.g.
    :meth:`nlgbias.progress.Progress.bar`; training counts sentences over every epoch, testing texts.

    Returns
    -------
    dict
        ``n_train, n_soft`` (texts with soft labels), ``n_test, test_accuracy, test_macro_f1, adapter_sha256, identical_to_shipped``
        (the test figures are NaN when the test split is empty; ``identical_to_shipped`` is the
        name of the shipped scorer whose adapter is byte-identical, ``regard``, ``regard-v1``, ``regard-v2`` or ``regard-v3``
        for 3 classes, or None), and ``n_own_test, own_test_accuracy, own_test_macro_f1,
        shipped_own_test_accuracy`` (NaN without held-out items of the user's).
    """
    from nlgbias.scorers.regard_model import load_classifier, save_classifier
    from nlgbias.training.train import TRAIN_THREADS, predict_proba, train_classifier

    labels = LABELS[classes]
    shipped: dict[str, str] = {}  # adapter digest -> scorer name, read before writing, in case ``out`` is a shipped folder
    for scorer in (RegardScorer, Regard4Scorer, RegardV1Scorer, Regard4V1Scorer, RegardV2Scorer, Regard4V2Scorer, RegardV3Scorer):  # the default names first
        shipped_file = classifier_dir(scorer.classes, scorer.release) / "adapter.safetensors"
        if scorer.classes == classes and shipped_file.is_file():
            shipped.setdefault(hashlib.sha256(shipped_file.read_bytes()).hexdigest(), scorer.name)

    table = view(data, classes)
    train, test = table[table["split"].isin(fit_splits)], table[table["split"] == "test"]
    if train.empty:
        raise InputError(f"no item has a regard_{classes} label in the {' or '.join(fit_splits)} split: "
                         "nothing to train on")
    soft_pair = None
    if soft is not None:
        missing = [f"p_{label}" for label in labels if f"p_{label}" not in soft.columns]
        if missing or "text" not in soft.columns:
            raise InputError(f"soft labels: need the columns text, {', '.join(f'p_{label}' for label in labels)} "
                             f"({classes} classes)")
        soft_pair = (soft["text"].astype(str).tolist(), soft[[f"p_{label}" for label in labels]].to_numpy())
    default_epochs = SETTINGS["epochs"] if soft is None else DISTILL_EPOCHS
    settings: dict[str, Any] = {**SETTINGS, "epochs": epochs if epochs is not None else default_epochs}
    n_items = len(train) + (len(soft) if soft is not None else 0)
    bar = progress("train regard", settings["epochs"] * n_items, "sentence") if progress else None
    try:
        tokenizer, model = train_classifier(train["text"].tolist(), train["label"].tolist(), label_names=labels,
                                            seed=seed, progress=bar, soft=soft_pair, **settings)
    finally:
        if bar is not None:
            bar.close()
    data_hash = hashlib.sha256(pd.util.hash_pandas_object(table, index=False).values.tobytes()).hexdigest()
    meta = {"version": version, "classes": classes, "seed": seed, "settings": settings, "threads": TRAIN_THREADS,
            "fit_splits": list(fit_splits), "train_items": int(len(train)), "data_sha256": data_hash}
    if soft is not None:
        meta["soft_items"] = int(len(soft))
        meta["soft_sha256"] = hashlib.sha256(pd.util.hash_pandas_object(
            soft[["text", *(f"p_{label}" for label in labels)]], index=False).values.tobytes()).hexdigest()
    extra = extra_counts(data, classes)
    if extra:  # the user's own items (--extra-data): how many were trained on, held out, left out
        meta["extra_items"] = extra
    folder = save_classifier(model, out, meta)
    tokenizer, saved, _ = load_classifier(folder)  # measure what is saved (int8 layer deltas), not the float model
    own = table[table["split"] == OWN_TEST]

    def predicted(model, texts: list[str], what: str) -> list[str]:
        bar = progress(what, len(texts), "text") if progress and texts else None
        try:
            return np.array(labels)[predict_proba(model, tokenizer, texts).argmax(axis=1)].tolist() if texts else []
        finally:
            if bar is not None:
                bar.update(len(texts))
                bar.close()

    pred = predicted(saved, test["text"].tolist(), "test split")
    meta_test = {"test_accuracy": accuracy(test["label"], pred),
                 "test_macro_f1": macro_f1(test["label"], pred, labels) if len(test) else float("nan")}
    own_pred = predicted(saved, own["text"].tolist(), "your held-out items")
    shipped_pred = own_pred
    if len(own):
        _, shipped_model, _ = load_classifier(classifier_dir(classes, shipped_release(classes)))
        shipped_pred = predicted(shipped_model, own["text"].tolist(), "your held-out items, shipped classifier")
    meta_test.update({"n_own_test": int(len(own)), "own_test_accuracy": accuracy(own["label"], own_pred),
                      "own_test_macro_f1": macro_f1(own["label"], own_pred, labels) if len(own) else float("nan"),
                      "shipped_own_test_accuracy": accuracy(own["label"], shipped_pred)})
    own.assign(predicted=own_pred, shipped_predicted=shipped_pred)[
        ["id", "text", "label", "predicted", "shipped_predicted"]].to_csv(folder / "own_test.csv", index=False)
    digest = hashlib.sha256((folder / "adapter.safetensors").read_bytes()).hexdigest()
    config_path = folder / "config.json"
    config = json.loads(config_path.read_text())
    config.update({k: None if isinstance(v, float) and np.isnan(v) and k not in ("test_accuracy", "test_macro_f1")
                   else v for k, v in meta_test.items()})
    config["adapter_sha256"] = digest
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    return {"n_train": int(len(train)), "n_soft": int(len(soft)) if soft is not None else 0, "n_test": int(len(test)),
            **meta_test, "adapter_sha256": digest,
            "identical_to_shipped": shipped.get(digest)}


__all__ = ["SETTINGS", "build_classifier", "dataset_dir", "load_dataset"]

__getattr__ = lazy_submodules(__name__)  # nlgbias.<package>.<module> after a plain import nlgbias
