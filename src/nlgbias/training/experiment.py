"""Compare the regard classifier with the paper's baselines on the same splits, over several seeds.

Models: our fine-tuned MiniLM classifier, a bag-of-words logistic regression, a 2-layer LSTM, and
VADER and TextBlob taken as regard.  For each: accuracy and macro-F1 on dev and test (mean and
sd over seeds), expected calibration error on test, the confusion matrix on test (summed over
seeds), and a paired permutation test on test between the best model (by mean dev macro-F1) and
each other model, on per-item accuracy averaged over seeds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from nlgbias.metrics.significance import fdr_bh
from nlgbias.store.export import write_json, write_text
from nlgbias.training.baselines import BagOfWords, Classifier, LSTMBaseline, SentimentAsRegard
from nlgbias.training.evaluate import accuracy, confusion, expected_calibration_error, macro_f1, paired_permutation_p

LABELS = {3: ["negative", "neutral", "positive"], 4: ["negative", "neutral", "positive", "other"]}
# The shipped recipe, chosen on the dev split (docs/regard.md): every transformer layer trained
# (embeddings frozen), which beat LoRA adapters (rank 8/16) and training only the top 2-3 layers by 2-6 points.
SETTINGS = {"epochs": 4, "batch_size": 16, "lr": 4e-5, "rank": 0, "top_layers": 6, "weight_decay": 0.01,
            "balance": False}
CLASSIFIER = "minilm"


def view(data: pd.DataFrame, classes: int) -> pd.DataFrame:
    """Rows with a label in the ``classes`` view: ``id, text, label, split, template_id, context``."""
    column = f"regard_{classes}"
    table = data[data[column].isin(LABELS[classes])]
    return table.assign(label=table[column])[["id", "text", "label", "split", "template_id", "context"]]


class MiniLMClassifier:
    """Adapter for :func:`nlgbias.training.train.train_classifier` with the baselines' interface."""

    name = CLASSIFIER

    def __init__(self, labels: Sequence[str], *, device: str = "cpu", **settings) -> None:
        self.labels = list(labels)
        self.device = device
        self.settings = settings

    def fit(self, texts, labels, seed: int = 0) -> "MiniLMClassifier":
        from nlgbias.training.train import train_classifier

        settings = {**SETTINGS, **self.settings}
        self.tokenizer, self.model = train_classifier(texts, labels, label_names=self.labels, seed=seed,
                                                      device=self.device, **settings)
        return self

    def predict_proba(self, texts) -> np.ndarray:
        from nlgbias.training.train import predict_proba

        return predict_proba(self.model, self.tokenizer, texts)


def default_models(labels: Sequence[str]) -> dict[str, Callable[[], Classifier]]:
    return {
        CLASSIFIER: lambda: MiniLMClassifier(labels),
        "bow-logreg": lambda: BagOfWords(labels),
        "lstm-2layer": lambda: LSTMBaseline(labels),
        "vader": lambda: SentimentAsRegard("vader", labels),
        "textblob": lambda: SentimentAsRegard("textblob", labels),
    }


def compare_models(data: pd.DataFrame, *, classes: int = 3, seeds: Sequence[int] = range(5),
                   models: dict[str, Callable[[], Classifier]] | None = None, progress=None) -> dict:
    """Train and evaluate every model on the dataset's splits; see the module docstring.

    Returns
    -------
    dict
        ``labels, counts`` (per split and label), ``results`` (per model: per split mean/sd of
        accuracy and macro-F1, per-seed values, test ECE), ``best``, ``permutation`` (model ->
        p-value vs best), ``confusion`` (model -> test confusion summed over seeds).
    """
    labels = LABELS[classes]
    table = view(data, classes)
    parts = {name: table[table["split"] == name] for name in ("train", "dev", "test")}
    models = models or default_models(labels)
    results: dict[str, dict[str, dict[str, Any]]] = {}
    correct, confusions = {}, {}
    for name, make in models.items():
        per_seed: dict[str, dict[str, list[float]]] = {"dev": {"accuracy": [], "macro_f1": []},
                                                       "test": {"accuracy": [], "macro_f1": []}}
        eces, item_correct = [], []
        conf: pd.DataFrame | None = None
        for seed in seeds:
            model = make().fit(parts["train"]["text"].tolist(), parts["train"]["label"].tolist(), seed=seed)
            for split in ("dev", "test"):
                gold = parts[split]["label"].to_numpy()
                probs = model.predict_proba(parts[split]["text"].tolist())
                pred = np.array(labels)[probs.argmax(axis=1)]
                per_seed[split]["accuracy"].append(accuracy(gold, pred))
                per_seed[split]["macro_f1"].append(macro_f1(gold, pred, labels))
                if split == "test":
                    gold_index = np.array([labels.index(g) for g in gold])
                    eces.append(expected_calibration_error(probs, gold_index))
                    item_correct.append(pred == gold)
                    c = confusion(gold, pred, labels)
                    conf = c if conf is None else conf + c
            if progress:
                progress(name, seed)
        results[name] = {
            split: {metric: {"mean": float(np.mean(v)), "sd": float(np.std(v, ddof=1)) if len(v) > 1 else 0.0,
                             "per_seed": [float(x) for x in v]} for metric, v in metrics.items()}
            for split, metrics in per_seed.items()}
        results[name]["test"]["ece"] = {"mean": float(np.mean(eces)), "sd": float(np.std(eces, ddof=1)) if len(eces) > 1 else 0.0}
        correct[name] = np.mean(item_correct, axis=0)
        if conf is None:
            raise ValueError("compare_models: seeds is empty")
        confusions[name] = conf.astype(int).values.tolist()
    best = max(results, key=lambda n: results[n]["dev"]["macro_f1"]["mean"])
    permutation = {name: paired_permutation_p(correct[best], correct[name]) for name in results if name != best}
    counts = {split: part["label"].value_counts().reindex(labels, fill_value=0).astype(int).to_dict()
              for split, part in parts.items()}
    return {"classes": classes, "labels": labels, "seeds": list(seeds), "counts": counts, "results": results,
            "best": best, "permutation": permutation, "confusion": confusions}


def adjusted_permutation(comparison: dict) -> dict[str, float]:
    """The best-vs-each p-values of ``comparison``, Benjamini-Hochberg-adjusted over the comparisons."""

    names = list(comparison["permutation"])
    return dict(zip(names, fdr_bh(np.array([comparison["permutation"][n] for n in names], dtype=float))))


def _mean_sd(split: dict, metric: str) -> str:
    return f"{split[metric]['mean']:.3f} ± {split[metric]['sd']:.3f}"


def markdown_table(comparison: dict) -> str:
    """The comparison as a Markdown table (mean ± sd over seeds; p BH-adjusted over the comparisons)."""
    lines = ["| model | dev accuracy | dev macro-F1 | test accuracy | test macro-F1 | test ECE | p vs best (test, adj.) |",
             "|---|---|---|---|---|---|---|"]
    adjusted = adjusted_permutation(comparison)
    for name, r in comparison["results"].items():
        dev, test = r["dev"], r["test"]
        p = "(best)" if name == comparison["best"] else f"{adjusted[name]:.2g}"
        lines.append(f"| {name} | {_mean_sd(dev, 'accuracy')} | {_mean_sd(dev, 'macro_f1')} | "
                     f"{_mean_sd(test, 'accuracy')} | {_mean_sd(test, 'macro_f1')} | {_mean_sd(test, 'ece')} | {p} |")
    return "\n".join(lines)


def report_markdown(comparison: dict) -> str:
    """Label counts per split, the comparison table and each model's test confusion (summed over seeds)."""
    labels = comparison["labels"]
    lines = [f"### {comparison['classes']}-class regard, {len(comparison['seeds'])} seeds", "",
             "| split | " + " | ".join(labels) + " | total |", "|---|" + "---:|" * (len(labels) + 1)]
    for split, counts in comparison["counts"].items():
        lines.append(f"| {split} | " + " | ".join(str(counts[label]) for label in labels)
                     + f" | {sum(counts.values())} |")
    lines += ["", markdown_table(comparison), "",
              "Test confusion, summed over seeds (rows: gold; columns: predicted, in the order "
              + ", ".join(labels) + "):", ""]
    for name, matrix in comparison["confusion"].items():
        cells = "; ".join(f"{gold} " + "/".join(str(v) for v in row) for gold, row in zip(labels, matrix))
        lines.append(f"- {name}: {cells}")
    return "\n".join(lines)


def write_comparison(data: pd.DataFrame, out: str | Path, *, classes: int = 3, seeds: Sequence[int] = range(5),
                     models: dict[str, Callable[[], Classifier]] | None = None,
                     progress: Callable[[str, int], None] | None = None) -> dict:
    """:func:`compare_models`, written to ``out/comparison.json`` and ``out/comparison.md``; returns the comparison."""

    comparison = compare_models(data, classes=classes, seeds=seeds, models=models, progress=progress)
    write_json(Path(out) / "comparison.json", comparison)
    write_text(Path(out) / "comparison.md", report_markdown(comparison) + "\n")
    return comparison
