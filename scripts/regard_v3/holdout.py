"""Leave-one-source-out and family hold-out for the regard v3 recipes: teacher, student, gold-only.

    python scripts/regard_v3/holdout.py --mpnet DIR --minilm DIR --data regard-v3.csv \
        --pool POOL.csv --device cuda --out OUT [--only NAME ...] [--jobs N]

For each hold-out (one of the four model-decoding sources, or one prompt family) every annotated
item of that source or family leaves training, and three recipes are trained on the train + dev
items left (3-class view of ``--data``):

- ``teacher``: all-mpnet-base-v2 fully fine-tuned (``teacher.py``'s settings);
- ``student``: MiniLM at the shipped recipe, on those gold items plus the unannotated pool
  (``--pool``: ``text, model, decoding, suite``) less the texts of the held-out source or of the
  suites the held-out family comes from, with the probabilities of *this* hold-out's teacher
  (knowledge distillation, 2 epochs, as shipped);
- ``gold_only``: MiniLM at the same recipe on the gold items alone (4 epochs: release 2's recipe
  on the v3 data).

Each is measured on every item of the held-out source or family (all splits: none was trained on).
``--recipes`` trains some of the three (the student's teacher is trained and measured with it;
gold-only alone needs no mpnet).
``dev:*`` runs compare full fine-tuning of the teacher with LoRA on the dev split (trained on
train alone).  Hold-outs run in parallel processes (``--jobs``, default all at once: on one GPU the
small batches leave room).  Writes ``OUT/holdout.json`` (settings, seconds, n, accuracy,
macro-F1, negative recall per run and recipe) and ``OUT/holdout-predictions.csv`` (item id,
run, gold label and each recipe's label).  ``--sample N`` runs the whole pipeline on N rows of each
table (a smoke test, on the CPU too).  Figures with confidence intervals are made from them
by ``compare_v3.py --holdout``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from nlgbias.training.experiment import LABELS, SETTINGS, view
from nlgbias.training.train import predict_proba, train_classifier

from evaluate_held_out import figures  # same folder (a script's folder is first on sys.path)
from teacher import SETTINGS as TEACHER  # same folder

SOURCES = ("smollm2/default", "smollm2/hot", "gemma3/default", "gemma3/hot")
MODEL_OF = {"smollm2": "smollm2-135m", "gemma3": "gemma3-270m"}
FAMILY_SUITES = {  # the pool suites a family's prompts come from (the steering file holds Sheng's templates too)
    "sheng": {"sheng2019", "regard-v3-sources"}, "steer": {"regard-v3-sources"},
    "holistic": {"holisticbias-regard"}, "bold": {"bold"}, "news": set(), "occupation-v2": set()}
LORA = {"rank": 16, "alpha": 32.0, "top_layers": 0, "train_all": False, "weight_decay": 0.01,
        "balance": False, "batch_size": 32, "epochs": 2}
DEV_RUNS = {"dev:full": TEACHER,
            "dev:lora-lr5e-4": {**LORA, "lr": 5e-4},
            "dev:lora-lr1e-3": {**LORA, "lr": 1e-3},
            "dev:lora-lr1e-3-4ep": {**LORA, "lr": 1e-3, "epochs": 4}}
RECIPES = ("teacher", "student", "gold_only")
RUNS = [f"source:{s}" for s in SOURCES] + [f"family:{f}" for f in FAMILY_SUITES] + list(DEV_RUNS)


def split_for(run: str, table: pd.DataFrame, pool: pd.DataFrame):
    """(training items, measured items, pool rows the student may see) of one run."""
    kind, name = run.split(":", 1)
    if kind == "dev":
        return table[table["split"] == "train"], table[table["split"] == "dev"], pool
    held = table["source"] == name if kind == "source" else table["family"] == name
    fit = table[~held & table["split"].isin(["train", "dev"])]
    if kind == "source":
        model, decoding = name.split("/")
        seen = ~((pool["model"] == MODEL_OF[model]) & (pool["decoding"] == decoding))
    else:
        seen = ~pool["suite"].isin(FAMILY_SUITES[name])
    return fit, table[held], pool[seen]


def load(folder: Path):
    from transformers import AutoModel, AutoTokenizer

    return AutoTokenizer.from_pretrained(folder), AutoModel.from_pretrained(folder, dtype=torch.float32)


def run_one(run: str, args) -> None:
    """Train the run's recipes, write PART/<run>.json and PART/<run>.csv."""
    torch.set_float32_matmul_precision("high")
    data = pd.read_csv(args.data)
    table = view(data, 3).merge(data[["id", "source", "family"]], on="id")
    fit, measured, pool = split_for(run, table, pd.read_csv(args.pool))
    if args.sample:  # a smoke test of the whole pipeline on a few rows of each
        fit, measured, pool = (t.sample(min(len(t), args.sample), random_state=0) for t in (fit, measured, pool))
    texts, labels, names = fit["text"].tolist(), fit["label"].tolist(), LABELS[3]
    result = {"run": run, "n_fit": len(fit), "n_pool": len(pool), "seconds": {}, "recipes": {}}
    preds = pd.DataFrame({"id": measured["id"], "run": run, "gold": measured["label"]})

    def measure(recipe: str, tokenizer, model) -> np.ndarray:
        model.eval()
        probs = predict_proba(model, tokenizer, measured["text"].tolist())
        preds[recipe] = np.array(names)[probs.argmax(axis=1)]
        result["recipes"][recipe] = figures(preds["gold"], preds[recipe])
        return probs

    def timed(recipe: str, settings: dict, folder: Path, soft=None):
        tokenizer, encoder = load(folder)
        start = time.time()
        _, model = train_classifier(texts, labels, label_names=names, seed=0, encoder=encoder, tokenizer=tokenizer,
                                    device=args.device, soft=soft, **settings)
        result["seconds"][recipe] = round(time.time() - start, 1)
        return tokenizer, model

    if run.startswith("dev:"):
        tokenizer, model = timed("teacher", DEV_RUNS[run], args.mpnet)
        measure("teacher", tokenizer, model)
    else:
        if "teacher" in args.recipes or "student" in args.recipes:  # the student learns from this teacher
            tokenizer, teacher = timed("teacher", TEACHER, args.mpnet)
            measure("teacher", tokenizer, teacher)
        if "student" in args.recipes:
            soft = predict_proba(teacher.eval(), tokenizer, pool["text"].astype(str).tolist(), batch_size=256)
            del teacher
            if args.device.startswith("cuda"):
                torch.cuda.empty_cache()
            measure("student", *timed("student", {**SETTINGS, "epochs": 2}, args.minilm,
                                      soft=(pool["text"].astype(str).tolist(), soft)))
        if "gold_only" in args.recipes:
            measure("gold_only", *timed("gold_only", SETTINGS, args.minilm))
    part = args.part / run.replace(":", "_").replace("/", "_")
    part.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    preds.to_csv(part.with_suffix(".csv"), index=False)


def collect(args, start: float, failed: list[str]) -> list[dict]:
    """Merge the finished runs' parts into OUT/holdout.json and OUT/holdout-predictions.csv."""
    results = [json.loads(p.read_text()) for p in sorted(args.part.glob("*.json"))]
    meta = {"device": torch.cuda.get_device_name(0) if args.device.startswith("cuda") else "cpu",
            "wall_seconds": round(time.time() - start, 1), "teacher_settings": TEACHER,
            "student_settings": {**SETTINGS, "epochs": 2}, "gold_only_settings": SETTINGS, "dev_runs": DEV_RUNS,
            "sample": args.sample, "failed": failed, "runs": results}
    (args.out / "holdout.json").write_text(json.dumps(meta, indent=2) + "\n")
    parts = sorted(args.part.glob("*.csv"))
    if parts:
        pd.concat([pd.read_csv(p) for p in parts]).to_csv(args.out / "holdout-predictions.csv", index=False)
    return results


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mpnet", type=Path, required=True)
    parser.add_argument("--minilm", type=Path, required=True)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--pool", type=Path, required=True)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--only", nargs="*", default=RUNS)
    parser.add_argument("--jobs", type=int, default=len(RUNS))
    parser.add_argument("--recipes", nargs="+", default=list(RECIPES), choices=RECIPES,
                        help="which recipes (the student brings its teacher; gold_only alone needs no mpnet)")
    parser.add_argument("--sample", type=int, default=0, help="train and measure on N rows of each table (smoke test)")
    parser.add_argument("--part", type=Path, help=argparse.SUPPRESS)  # set for a child process
    args = parser.parse_args()
    if args.part:
        run_one(args.only[0], args)
        return
    args.part = args.out / "parts"
    args.part.mkdir(parents=True, exist_ok=True)
    start, pending, running, failed = time.time(), list(args.only), [], []
    common = [sys.executable, __file__, "--mpnet", str(args.mpnet), "--minilm", str(args.minilm), "--data",
              str(args.data), "--pool", str(args.pool), "--device", args.device, "--out", str(args.out),
              "--sample", str(args.sample), "--recipes", *args.recipes,
              "--part", str(args.part)]
    if args.jobs < 1:
        parser.error(f"--jobs {args.jobs}: must be at least 1")
    threads = max(1, (os.cpu_count() or 1) // max(1, min(args.jobs, len(args.only))))  # the CPU's cores shared out
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "CUBLAS_WORKSPACE_CONFIG": ":4096:8"}
    while pending or running:
        while pending and len(running) < args.jobs:
            run = pending.pop(0)
            log = open(args.part / f"{run.replace(':', '_').replace('/', '_')}.log", "w")
            running.append((run, subprocess.Popen([*common, "--only", run], env=env, stdout=log, stderr=log)))
        time.sleep(2)
        for item in [r for r in running if r[1].poll() is not None]:
            running.remove(item)
            print(f"{item[0]}: exit {item[1].returncode} at {time.time() - start:.0f} s", flush=True)
            if item[1].returncode:
                failed.append(item[0])
            collect(args, start, failed)  # after each run: a run cut off by a time limit keeps what finished
    print(json.dumps({r["run"]: {k: round(v["accuracy"], 3) for k, v in r["recipes"].items()}
                      for r in collect(args, start, failed)}))


if __name__ == "__main__":
    main()
