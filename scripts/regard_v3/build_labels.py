"""Join the three independent annotation passes of the regard v3 sheets to their items.

    python scripts/regard_v3/build_labels.py

In: ``sheets/<sheet>.csv`` (``id, text``) and ``labels/<sheet>-a1.csv`` .. ``-a3.csv`` (``id, regard``,
one file per pass, written by an annotator who saw only the guidelines and the sheet), the item
tables ``pool-v3.csv`` and ``bold-validity.csv``.  A sheet counts once all three passes exist and
each lists exactly the sheet's ids with labels from the six regard categories; otherwise it is
reported and left out.

Out: ``regard-v3-labelled.csv`` (the pool items of every complete ``v3-part*`` sheet) and
``bold-validity-labelled.csv`` (the ``bold-part*`` sheets): each item's columns plus
``regard_a1..a3`` and the majority labels ``regard_3``, ``regard_4``, ``regard_6`` (strict majority;
ties and a 3-class ``other`` majority stay empty, as in regard v2); ``agreement-v3.json`` with Fleiss'
kappa, Krippendorff's alpha and pairwise Cohen's kappa per set (and per family for the pool).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from nlgbias.annotation import adjudicate, agreement
from nlgbias.annotation.categories import REGARD

HERE = Path(__file__).resolve().parent
PASSES = ("a1", "a2", "a3")
SETS = {"v3": ("pool-v3.csv", "regard-v3-labelled.csv"), "bold": ("bold-validity.csv", "bold-validity-labelled.csv")}


def sheet_passes(sheet: Path) -> pd.DataFrame | None:
    """``id, annotator, regard`` of the three passes over ``sheet``, or None (with the reason printed)."""
    ids = pd.read_csv(sheet, dtype=str)["id"].tolist()
    passes = []
    for name in PASSES:
        path = HERE / "labels" / f"{sheet.stem}-{name}.csv"
        if not path.is_file():
            print(f"{sheet.name}: pass {name} missing; sheet left out")
            return None
        labels = pd.read_csv(path, dtype=str, keep_default_na=False)
        labels["regard"] = labels["regard"].str.strip()
        if labels["id"].tolist() != ids:
            wrong = sorted(set(labels["id"]) ^ set(ids))[:3]
            print(f"{path.name}: ids differ from the sheet's ({len(labels)} vs {len(ids)} rows, e.g. {wrong}); sheet left out")
            return None
        bad = labels[~labels["regard"].isin(list(REGARD))]
        if not bad.empty:
            print(f"{path.name}: {len(bad)} labels outside the categories (e.g. {bad.iloc[0].to_dict()}); sheet left out")
            return None
        passes.append(labels.assign(annotator=name)[["id", "annotator", "regard"]])
    return pd.concat(passes, ignore_index=True)


def labelled(items: pd.DataFrame, labels: pd.DataFrame) -> pd.DataFrame:
    """``items`` that have labels, with ``regard_a1..a3`` and the majority columns."""
    table = items[items["id"].isin(set(labels["id"]))].reset_index(drop=True)
    wide = labels.pivot(index="id", columns="annotator", values="regard")
    for name in PASSES:
        table[f"regard_{name}"] = table["id"].map(wide[name])
    for classes in (3, 4, 6):
        majority = adjudicate(labels, "regard", classes=classes, ties="drop").set_index("id")["label"]
        table[f"regard_{classes}"] = table["id"].map(majority)
    return table


def main() -> None:
    figures = {}
    for name, (items_file, out_file) in SETS.items():
        sheets = sorted((HERE / "sheets").glob(f"{name}-part*.csv"))
        found = [sheet_passes(sheet) for sheet in sheets]
        complete = [f for f in found if f is not None]
        if not complete:
            continue
        labels = pd.concat(complete, ignore_index=True)
        items = pd.read_csv(HERE / items_file, dtype={"generation_id": str, "seed": str})
        table = labelled(items, labels)
        table.to_csv(HERE / out_file, index=False)
        entry = {"sheets": [s.stem for s, f in zip(sheets, found) if f is not None], "items": int(len(table)),
                 "overall": agreement(labels, "regard"),
                 "majority_3": {k: int(v) for k, v in table["regard_3"].value_counts(dropna=False).items()}}
        if "family" in table:
            entry["per_family"] = {family: agreement(labels[labels["id"].isin(set(group["id"]))], "regard")
                                   for family, group in table.groupby("family")}
        figures[name] = entry
        print(f"{name}: {len(table)} items from {len(complete)} sheets; Fleiss kappa (3 classes) "
              f"{entry['overall']['fleiss_kappa_3']:.3f}; majority {entry['majority_3']}")
    (HERE / "agreement-v3.json").write_text(json.dumps(figures, indent=2, default=float) + "\n")


if __name__ == "__main__":
    main()
