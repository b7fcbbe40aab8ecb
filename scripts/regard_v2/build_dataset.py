"""Build the regard v2 dataset from the v1 items, the new items and three annotation passes.

    python scripts/regard_v2/build_dataset.py --items runs/regard-v2/items.csv \
        --passes ANNOT/a1 ANNOT/a2 ANNOT/a3 --out src/nlgbias/data/regard

Each pass folder holds ``out/*.csv`` sheets (``id,regard``) written by one annotator under the v2
guidelines. Every v1 item was annotated again. Writes ``regard-v2.csv``, which keeps the text,
source and selection of every item, each pass's label (``regard_a1..a3``), the majority labels in
the 3-, 4- and 6-class views, the v1 majority labels for the re-annotated items (``regard_v1_4``)
and the split. It also writes ``agreement-v2.json`` with agreement overall and per source, and
how many v1 labels moved.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

from nlgbias.annotation import adjudicate, agreement
from nlgbias.annotation.categories import REGARD
from nlgbias.training.dataset import assign_splits, dataset_dir, load_dataset

ITEM_COLUMNS = ["id", "text", "source", "model", "decoding", "family", "context", "template_id", "group",
                "vader_label", "selection", "generation_id"]


def read_pass(folder: Path, name: str) -> pd.DataFrame:
    """One pass's labels as ``id, annotator, regard``; every label must be a regard category."""
    sheets = [pd.read_csv(path, dtype=str) for path in sorted((folder / "out").glob("*.csv"))]
    labels = pd.concat(sheets, ignore_index=True).assign(annotator=name)
    labels["regard"] = labels["regard"].str.strip()
    bad = labels[~labels["regard"].isin(list(REGARD))]
    if not bad.empty:
        raise SystemExit(f"{folder}: {len(bad)} labels outside the categories, e.g. {bad.iloc[0].to_dict()}")
    if labels["id"].duplicated().any():
        raise SystemExit(f"{folder}: duplicate ids, e.g. {labels.loc[labels['id'].duplicated(), 'id'].iloc[0]}")
    return labels[["id", "annotator", "regard"]]


def v1_items() -> pd.DataFrame:
    """The v1 items in the v2 item layout: default decoding, Sheng family, their v1 majority label."""
    v1 = load_dataset(dataset_dir() / "regard.csv")
    return v1.assign(source=v1["model"].str.split("-").str[0] + "/default", decoding="default", family="sheng",
                     selection="v1", regard_v1_4=v1["regard_4"])


def majority_columns(table: pd.DataFrame, labels: pd.DataFrame) -> pd.DataFrame:
    """``regard_a*`` per pass and the adjudicated ``regard_3``, ``regard_4``, ``regard_6``."""
    wide = labels.pivot(index="id", columns="annotator", values="regard")
    for name in wide.columns:
        table[f"regard_{name}"] = table["id"].map(wide[name])
    for classes in (3, 4, 6):
        majority = adjudicate(labels, "regard", classes=classes, ties="drop")
        table[f"regard_{classes}"] = table["id"].map(majority.set_index("id")["label"])
    return table


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=Path, required=True)
    parser.add_argument("--passes", type=Path, nargs=3, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    new = pd.read_csv(args.items, dtype={"generation_id": str})
    table = pd.concat([v1_items()[ITEM_COLUMNS + ["regard_v1_4"]], new[ITEM_COLUMNS]], ignore_index=True)
    labels = pd.concat([read_pass(folder, f"a{k + 1}") for k, folder in enumerate(args.passes)], ignore_index=True)
    missing = set(table["id"]) - set(labels.groupby("id").filter(lambda g: len(g) == 3)["id"])
    if missing:
        print(f"{len(missing)} items lack three labels; they are left out (e.g. {sorted(missing)[:3]})")
        table = table[~table["id"].isin(missing)]
    labels = labels[labels["id"].isin(set(table["id"]))]
    table = majority_columns(table.reset_index(drop=True), labels)
    stratum = table["regard_4"].fillna("none")
    table["split"] = assign_splits(table.assign(stratum=stratum), stratify=["source", "family", "stratum"],
                                   seed=args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out / "regard-v2.csv", index=False)

    old = table[table["selection"] == "v1"]
    moved = old.dropna(subset=["regard_v1_4", "regard_4"])
    figures = {
        "overall": agreement(labels, "regard"),
        "per_source": {f"{s}|{f}": agreement(labels[labels["id"].isin(set(g["id"]))], "regard")
                       for (s, f), g in table.groupby(["source", "family"])},
        "v1_relabelled": {"items": int(len(old)), "compared": int(len(moved)),
                          "moved": int((moved["regard_v1_4"] != moved["regard_4"]).sum()),
                          "moves": {f"{a}->{b}": int(n) for (a, b), n in
                                    moved[moved["regard_v1_4"] != moved["regard_4"]]
                                    .groupby(["regard_v1_4", "regard_4"]).size().items()}},
    }
    (args.out / "agreement-v2.json").write_text(json.dumps(figures, indent=2, default=float) + "\n")
    print(table.groupby(["split", "regard_3"]).size().unstack(fill_value=0))
    print(table.groupby(["source", "family", "regard_3"]).size().unstack(fill_value=0))
    print(json.dumps(figures["v1_relabelled"], indent=1))


if __name__ == "__main__":
    main()
