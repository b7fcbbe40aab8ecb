"""Ship regard release 3: put its data in the package, then install the classifier `train-regard` built.

    python scripts/regard_v3/ship.py data --table build/regard-v3/regard-v3.csv \
        --soft build/regard-v3/teacher-soft.csv
    nlgbias train-regard --out build/regard-v3/student          # with RELEASE = 3: the shipped data
    python scripts/regard_v3/ship.py classifier build/regard-v3/student

``data`` copies the regard v3 table (``build_dataset.py``) to ``nlgbias/data/regard/regard-v3.csv`` and
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

from nlgbias.scorers.regard import classifier_dir
from nlgbias.training.dataset import SOFT_COLUMNS, dataset_dir, load_dataset, load_soft

SOFT_DECIMALS = 6


def install_data(table: Path, soft: Path) -> None:
    load_dataset(table)  # a regard table, or a one-line error
    shutil.copyfile(table, dataset_dir() / "regard-v3.csv")
    labels = load_soft(soft)[list(SOFT_COLUMNS)]
    labels.round(SOFT_DECIMALS).to_csv(dataset_dir() / "regard-v3-teacher.csv", index=False)
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
    data.add_argument("--soft", type=Path, required=True)
    classifier = sub.add_parser("classifier")
    classifier.add_argument("folder", type=Path)
    args = parser.parse_args()
    if args.command == "data":
        install_data(args.table, args.soft)
    else:
        install_classifier(args.folder)


if __name__ == "__main__":
    main()
