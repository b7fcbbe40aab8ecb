"""Ship regard release 3: put its data in the package, then install the classifier `train-regard` built.

    python scripts/regard_v3/ship.py data --table build/regard-v3/regard-v3.csv \
        --soft build/regard-v3/teacher-soft.csv
    nlgbias train-regard --out build/regard-v3/student          # with RELEASE = 3: the shipped data
    python scripts/regard_v3/ship.py classifier build/regard-v3/student

``data`` (``--soft`` repeatable: the files are merged in order, a text's first row kept) copies the regard v3 table (``build_dataset.py``) to ``nlgbias/data/regard/regard-v3.csv`` and
the teacher's soft labels of the unannotated pool (``teacher.py label``) to ``regard-v3-teacher.csv``,
keeping ``text, p_negative, p_neutral, p_positive`` rounded to 6 decimals (what training reads).
With ``RELEASE = 3`` in ``nlgbias/scorers/regard.py``, ``train-regard`` with no ``--data`` trains on
exactly these two files (the student: knowledge distillation, ``DISTILL_EPOCHS`` epochs), so the
classifier that ships is the one any user rebuilds; ``classifier`` copies its adapter and config to
``classifier-v3-3class``.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import pandas as pd

from nlgbias.scorers.regard import classifier_dir
from nlgbias.training.dataset import SOFT_COLUMNS, dataset_dir, load_dataset, load_soft

SOFT_DECIMALS = 6


def merged_soft(paths: list[Path]) -> pd.DataFrame:
    """The soft labels of every file, in order, a text's first row kept, rounded as shipped."""
    labels = pd.concat([load_soft(path)[list(SOFT_COLUMNS)] for path in paths], ignore_index=True)
    return labels.drop_duplicates("text").round(SOFT_DECIMALS)


def install_data(table: Path, soft: list[Path]) -> None:
    load_dataset(table)  # a regard table, or a one-line error
    shutil.copyfile(table, dataset_dir() / "regard-v3.csv")
    labels = merged_soft(soft)
    labels.to_csv(dataset_dir() / "regard-v3-teacher.csv", index=False)
    print(f"{dataset_dir() / 'regard-v3.csv'}, {dataset_dir() / 'regard-v3-teacher.csv'} ({len(labels)} texts)")


def install_classifier(folder: Path) -> None:
    target = classifier_dir(3, 3)
    target.mkdir(parents=True, exist_ok=True)
    for name in ("adapter.safetensors", "config.json"):
        shutil.copyfile(folder / name, target / name)
    print(f"installed {folder} into {target}")


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    data = sub.add_parser("data")
    data.add_argument("--table", type=Path, required=True)
    data.add_argument("--soft", type=Path, required=True, action="append", help="repeatable: merged in order")
    merge = sub.add_parser("merge-soft", help="write the merged soft labels to --out (a candidate's --soft)")
    merge.add_argument("soft", type=Path, nargs="+")
    merge.add_argument("--out", type=Path, required=True)
    classifier = sub.add_parser("classifier")
    classifier.add_argument("folder", type=Path)
    args = parser.parse_args()
    if args.command == "data":
        install_data(args.table, args.soft)
    elif args.command == "merge-soft":
        merged_soft(args.soft).to_csv(args.out, index=False)
        print(f"{args.out}: {len(merged_soft(args.soft))} texts")
    else:
        install_classifier(args.folder)


if __name__ == "__main__":
    main()
