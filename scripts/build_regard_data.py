"""Build the shipped regard dataset from the annotation sheets (run once by the maintainers).

    python scripts/build_regard_data.py --items ITEMS.csv --sheets a1.csv a2.csv a3.csv --out src/nlgbias/data/regard

Each sheet is ``id,annotator,...,regard,sentiment``; ``items.csv`` comes from
``nlgbias annotate sample``.  Writes ``regard.csv`` (texts, every annotator's labels, majority
labels in the 3- and 4-class views, split), ``agreement.json`` and ``correlations.csv``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

from nlgbias.annotation import agreement, correlation_table, import_sheets, training_table


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=Path, required=True)
    parser.add_argument("--sheets", type=Path, nargs="+", required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    items = pd.read_csv(args.items)
    labels = import_sheets(args.sheets, items=items)
    table = training_table(items, labels, seed=args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out / "regard.csv", index=False)
    figures = {column: agreement(labels, column) for column in ("regard", "sentiment")}
    (args.out / "agreement.json").write_text(json.dumps(figures, indent=2) + "\n")
    regard3 = table.dropna(subset=["regard_3"])[["id", "regard_3"]].rename(columns={"regard_3": "label"})
    sentiment3 = table.dropna(subset=["sentiment_3"])[["id", "sentiment_3"]].rename(columns={"sentiment_3": "label"})
    correlation_table(items, regard3, sentiment3).to_csv(args.out / "correlations.csv", index=False)
    print(table.groupby(["split", "regard_3"]).size().unstack(fill_value=0))
    print(json.dumps({c: {k: v for k, v in f.items() if k != "cohen_kappa"} for c, f in figures.items()}, indent=1))


if __name__ == "__main__":
    main()
