"""Build the regard v3 training table: regard v2, the labelled v3 pool, and templated CheckList cases.

    python scripts/regard_v3/build_dataset.py --out build/regard-v3/regard-v3.csv [--seed 0]

In: the shipped ``regard-v2.csv`` (its splits kept), ``regard-v3-labelled.csv`` (``build_labels.py``;
split here 70/15/15, stratified by source, family and majority label, near-duplicates together,
as regard v2 was), and the CheckList cases of the **train half** of the lexicons, minimum
functionality tests only (each case has one expected label), all in the train split.  The BOLD
validity set is not used: it stays a held-out family.

Templated cases may make up at most ``--max-templated`` (a quarter) of the items trained on
(train + dev); if there are more, a seeded sample per case type is kept.

Out: one CSV in the regard dataset layout (``id, text, source, model, decoding, family, context,
template_id, group, regard_a1..a3, regard_3, regard_4, regard_6, split``), ``family`` ``checklist``
and ``source`` ``template`` for the cases.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from nlgbias.checklist.cases import build_cases
from nlgbias.training.dataset import assign_splits, dataset_dir, load_dataset

HERE = Path(__file__).resolve().parent


def pool_items(seed: int) -> pd.DataFrame:
    """The labelled v3 pool with its own 70/15/15 split."""
    pool = pd.read_csv(HERE / "regard-v3-labelled.csv", dtype={"generation_id": str})
    pool["source"] = pool["source"].str.replace("gemma/", "gemma3/", regex=False)  # as regard v2 names it
    stratum = pool["regard_4"].fillna("none")
    pool["split"] = assign_splits(pool.assign(stratum=stratum), stratify=["source", "family", "stratum"], seed=seed)
    return pool


def checklist_items(limit: int, seed: int) -> pd.DataFrame:
    """Train-half MFT cases as labelled items, at most ``limit`` (seeded, in proportion per case type)."""
    cases = build_cases(half="train")
    cases = cases[cases["test"] == "MFT"]
    if len(cases) > limit:
        share = limit / len(cases)
        cases = cases.groupby("case_type", group_keys=False).apply(
            lambda g: g.sample(int(len(g) * share), random_state=seed))
    return pd.DataFrame({"id": cases["case_id"], "text": cases["text"], "source": "template", "model": "",
                         "decoding": "", "family": "checklist", "context": "checklist", "template_id": cases["template_id"],
                         "group": cases["case_type"], "regard_3": cases["expected"], "regard_4": cases["expected"],
                         "regard_6": cases["expected"].replace({"neutral": "no_impact"}), "split": "train"})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-templated", type=float, default=0.25)
    args = parser.parse_args()
    v2 = load_dataset(dataset_dir() / "regard-v2.csv")
    pool = pool_items(args.seed)
    real = pd.concat([v2, pool], ignore_index=True)
    fitted = int((real["split"].isin(["train", "dev"]) & real["regard_3"].notna()).sum())
    limit = int(args.max_templated / (1 - args.max_templated) * fitted)  # templated <= share of all fitted items
    table = pd.concat([real, checklist_items(limit, args.seed)], ignore_index=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out, index=False)
    fit = table[table["split"].isin(["train", "dev"]) & table["regard_3"].notna()]
    print(f"{len(table)} items; trained on {len(fit)} (templated {int((fit['family'] == 'checklist').sum())}, "
          f"{(fit['family'] == 'checklist').mean():.1%})")
    print(table.dropna(subset=["regard_3"]).groupby(["family", "split"]).size().unstack(fill_value=0))


if __name__ == "__main__":
    main()
