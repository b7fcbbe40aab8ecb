"""Pack what ``holdout.py`` needs on a lent GPU machine into ``.gpu/`` (ignored by git).

    python scripts/regard_v3/device_pack.py --mpnet DIR [--out .gpu] [--part-mb 52] [--pool-only]

Writes both encoders in float16 (the device call carries at most 64 MiB, so the tar of them is cut
into ``models.tar.part-*`` pieces sent one per call and joined there; the fine-tuning loads them
back as float32), ``regard-v3.csv`` (the shipped annotated table) and ``pool.csv`` (the pool of the
shipped release's teacher labels, ``text``, with the ``model, decoding, suite`` each text came from,
read from the pool files in ``build/regard-v3``).  ``--pool-only`` writes the two tables alone
(what ``holdout.py`` needs on the CPU).
"""

from __future__ import annotations

import argparse
import glob
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import torch
from transformers import AutoModel, AutoTokenizer

from nlgbias.scorers.regard import RELEASE
from nlgbias.scorers.regard_model import encoder_dir
from nlgbias.training.dataset import DATA_OF_RELEASE, SOFT_OF_RELEASE, dataset_dir


def half(source: Path, out: Path) -> None:
    AutoTokenizer.from_pretrained(source).save_pretrained(out)
    AutoModel.from_pretrained(source, dtype=torch.float16).save_pretrained(out)


def pack_models(args) -> None:
    """Both encoders in float16, tarred and cut into ``--part-mb`` pieces."""
    models = args.out / "models"
    if models.exists():
        shutil.rmtree(models)
    half(args.mpnet, models / "mpnet")
    half(encoder_dir(), models / "minilm")
    for old in args.out.glob("models.tar.part-*"):
        old.unlink()
    subprocess.run(f"tar -cf - -C {args.out} models | split -b {args.part_mb}M - {args.out}/models.tar.part-",
                   shell=True, check=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mpnet", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=Path(".gpu"))
    parser.add_argument("--part-mb", type=int, default=52)
    parser.add_argument("--pool-only", action="store_true", help="write regard-v3.csv and pool.csv alone")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.pool_only:
        pack_models(args)
    shutil.copy(dataset_dir() / DATA_OF_RELEASE[RELEASE], args.out / "regard-v3.csv")
    soft = pd.read_csv(dataset_dir() / SOFT_OF_RELEASE[RELEASE])[["text"]]
    pools = pd.concat(pd.read_csv(p) for p in sorted(glob.glob("build/regard-v3/pool-*.csv"))).drop_duplicates("text")
    pool = soft.merge(pools[["text", "model", "decoding", "suite"]], on="text", how="left")
    if pool["suite"].isna().any():
        raise SystemExit(f"{int(pool['suite'].isna().sum())} pool texts have no source in build/regard-v3/pool-*.csv")
    pool.to_csv(args.out / "pool.csv", index=False)
    for path in sorted(args.out.iterdir()):
        print(path, path.stat().st_size if path.is_file() else "")


if __name__ == "__main__":
    main()
