"""Choose the regard v2 annotation items from the generated pool (run once by the maintainers).

    python scripts/regard_v2/build_pool.py --runs runs/regard-v2 --out runs/regard-v2/items.csv

Reads every ``<run>/samples.parquet`` under ``--runs`` (folder name = ``<model>-<decoding>-<family>``),
keeps distinct non-empty masked sentences that are not in the v1 dataset, and selects items:

- ``random``: every item whose id-derived uniform draw is below ``--random-share`` (an unbiased
  sample of the pool, so the pool's label distribution can be estimated);
- ``uncertain``: the v1 classifier's largest class probability is below 0.6;
- ``disagree``: the v1 classifier and VADER (read as regard) disagree;
- ``vader``: up to ``--per-cell`` items per (source, template, VADER label), as in v1;
- ``remainder``: with ``--all``, every other item of the pool (annotation turned out cheap
  enough to read the whole pool; the reasons above still say what each item was chosen for).

Each item records its ``source`` and the first reason that selected it (in the order above).
No label is decided here: VADER and the classifier only choose *which* sentences people read.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd

from nlgbias.annotation.sample import item_id
from nlgbias.training.dataset import dataset_dir, load_dataset

def uniform(text_id: str, seed: int) -> float:
    """A uniform draw in [0, 1) fixed by the item id and seed."""
    digest = hashlib.sha256(f"{seed}:{text_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


ORDER = ["smollm2-default-sources", "smollm2-hot-sources", "smollm2-hot-sheng", "gemma-default-sources",
         "gemma-hot-sources", "gemma-hot-sheng"]  # generation order: a duplicate text stays with its first source


def load_pool(runs: Path) -> pd.DataFrame:
    """All distinct candidate items of every run under ``runs``, with source and selection signals."""
    frames = []
    for folder in (runs / name for name in ORDER if (runs / name / "samples.parquet").exists()):
        model, decoding, family = folder.name.split("-", 2)
        s = pd.read_parquet(folder / "samples.parquet")
        s = s[~s["is_empty"].astype(bool)]
        details = s["regard_details"].map(lambda d: d if isinstance(d, dict) else json.loads(d))
        frame = pd.DataFrame({
            "text": s["scored_text"], "context": s["context"], "template_id": s["template_id"],
            "group": s["group"], "model": s["model"], "vader_label": s["vader_label"],
            "generation_id": s["generation_id"], "decoding": decoding,
            "family": s["context"].map({"news": "news", "occupation": "occupation-v2", "respect": "sheng"})
            if family == "sources" else "sheng",
            "v1_label": s["regard_label"],
            "v1_pmax": details.map(lambda d: max(d.get(k, 0.0) for k in ("negative", "neutral", "positive"))),
        })
        frames.append(frame)
    pool = pd.concat(frames, ignore_index=True)
    pool["id"] = pool["text"].map(item_id)
    pool["source"] = pool["model"].str.split("-").str[0] + "/" + pool["decoding"]
    return pool.drop_duplicates("id", keep="first").reset_index(drop=True)


def select(pool: pd.DataFrame, *, random_share: float, per_cell: int, seed: int, everything: bool = False) -> pd.DataFrame:
    """The pool's items chosen for annotation, each with the first reason that chose it."""
    known = set(load_dataset(dataset_dir() / "regard.csv")["id"])
    pool = pool[~pool["id"].isin(known)].copy()
    pool["u"] = pool["id"].map(lambda i: uniform(i, seed))
    reasons = pd.Series("", index=pool.index)
    reasons[pool["u"] < random_share] = "random"
    reasons[(reasons == "") & (pool["v1_pmax"] < 0.6)] = "uncertain"
    reasons[(reasons == "") & (pool["v1_label"] != pool["vader_label"])] = "disagree"
    rest = pool[reasons == ""].sort_values("u")
    take = rest.groupby(["source", "family", "template_id", "vader_label"], sort=False).head(per_cell).index
    reasons[take] = "vader"
    if everything:
        reasons[reasons == ""] = "remainder"
    pool["selection"] = reasons
    chosen = pool[reasons != ""].sort_values(["source", "family", "template_id", "u"])
    return chosen.drop(columns="u").reset_index(drop=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=Path, default=Path("runs/regard-v2"))
    parser.add_argument("--out", type=Path, default=Path("runs/regard-v2/items.csv"))
    parser.add_argument("--random-share", type=float, default=0.35)
    parser.add_argument("--per-cell", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--all", action="store_true", help="Also take every item no reason chose (remainder).")
    args = parser.parse_args()
    pool = load_pool(args.runs)
    chosen = select(pool, random_share=args.random_share, per_cell=args.per_cell, seed=args.seed, everything=args.all)
    chosen.to_csv(args.out, index=False)
    print(f"pool {len(pool)} distinct, chosen {len(chosen)}")
    print(chosen.groupby(["source", "family"]).size().unstack(fill_value=0))
    print(chosen["selection"].value_counts().to_string())
    print(np.round(pool.groupby("source")["v1_label"].value_counts(normalize=True).unstack(), 3))


if __name__ == "__main__":
    main()
