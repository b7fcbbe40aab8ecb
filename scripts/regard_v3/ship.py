"""Ship a regard v3-recipe release (3, 4): put its data in the package, then install the classifier `train-regard` built.

    python scripts/regard_v3/ship.py data --table build/regard-v3/regard-v3.csv \
        --soft build/regard-v3/teacher-soft.csv
    nlgbias train-regard --out build/regard-v3/student          # with RELEASE = 4: the shipped data
    python scripts/regard_v3/ship.py classifier build/regard-v3/student

``data`` copies the regard v3 table (``build_dataset.py``) to ``nlgbias/data/regard/regard-v3.csv`` and
the teacher's soft labels of the unannotated pool (``teacher.py label``; ``--soft`` repeatable: the
files are merged in order, a text's first row kept) to the release's soft file
(``SOFT_OF_RELEASE[RELEASE]``: ``regard-v4-teacher.csv``), keeping ``text, p_negative, p_neutral,
p_positive`` rounded to 6 decimals (what training reads). ``train-regard`` with no ``--data`` trains
on exactly these two files (the student: knowledge distillation, ``DISTILL_EPOCHS`` epochs), so the
classifier that ships is the one any user rebuilds; ``classifier`` copies its adapter and config to
the release's folder (``classifier-v4-3class``).  ``merge-soft`` writes the merged labels for a
candidate's ``train-regard --soft``.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import pandas as pd

from nlgbias.scorers.regard import RELEASE, classifier_dir
from nlgbias.training.dataset import SOFT_COLUMNS, SOFT_OF_RELEASE, dataset_dir, load_dataset, load_soft

SOFT_DECIMALS = 6


def merged_soft(paths: list[Path]) -> pd.DataFrame:
    """The soft labels of every file, in order, a text's first row kept, rounded as shipped."""
    labels = pd.concat([load_soft(path)[list(SOFT_COLUMNS)] for path in paths], ignore_index=True)
    return labels.drop_duplicates("text").round(SOFT_DECIMALS)


def install_data(table: Path, soft: list[Path]) -> None:
    load_dataset(table)  # a regard table, or a one-line error
    shutil.copyfile(table, dataset_dir() / "regard-v3.csv")
    labels = merged_soft(soft)
    soft_file = dataset_dir() / SOFT_OF_RELEASE[RELEASE]
    labels.to_csv(soft_file, index=False)
    print(f"{dataset_dir() / 'regard-v3.csv'}, {soft_file} ({len(labels)} texts)")


def install_classifier(folder: Path) -> None:
    target = classifier_dir(3, RELEASE)
    target.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(folder / "adapter.safetensors", target / "adapter.safetensors")
    config = json.loads((folder / "config.json").read_text())
    if config["version"] != str(RELEASE):  # trained as a candidate before RELEASE moved on: the adapter is the same
        print(f"config version {config['version']} -> {RELEASE} (what train-regard writes now)")
        config["version"] = str(RELEASE)
    (target / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
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
        labels = merged_soft(args.soft)
        labels.to_csv(args.out, index=False)
        print(f"{args.out}: {len(labels)} texts")
    else:
        install_classifier(args.folder)


if __name__ == "__main__":
    main()
