"""Pack what ``holdout.py`` needs on a lent GPU machine into ``.gpu/`` (ignored by git).

    python scripts/regard_v3/device_pack.py --mpnet DIR [--out .gpu] [--part-mb 52]

Writes both encoders in float16 (the device call carries at most 64 MiB, so the tar of them is cut
into ``models.tar.part-*`` pieces sent one per call and joined there; the fine-tuning loads them
back as float32), ``regard-v3.csv`` (the shipped annotated table) and ``pool.csv`` (the shipped
teacher's pool, ``text``, with the ``model, decoding, suite`` each text came from, read from the
pool files in ``build/regard-v3``).
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

from nlgbias.scorers.regard_model import encoder_dir
from nlgbias.training.dataset import dataset_dir


def half(source: Path, out: Path) -> None:
    AutoTokenizer.from_pretrained(source).save_pretrained(out)
    AutoModel.from_pretrained(source, dtype=torch.float16).save_pretrained(out)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mpnet", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=Path(".gpu"))
    parser.add_argument("--part-mb", type=int, default=52)
    args = parser.parse_args()
    models = args.out / "models"
    if models.exists():
        shutil.rmtree(models)
    half(args.mpnet, models / "mpnet")
    half(encoder_dir(), models / "minilm")
    for old in args.out.glob("models.tar.part-*"):
        old.unlink()
    subprocess.run(f"tar -cf - -C {args.out} models | split -b {args.part_mb}M - {args.out}/models.tar.part-",
                   shell=True, check=True)
    shutil.copy(dataset_dir() / "regard-v3.csv", args.out / "regard-v3.csv")
    soft = pd.read_csv(dataset_dir() / "regard-v3-teacher.csv")[["text"]]
    pools = pd.concat(pd.read_csv(p) for p in sorted(glob.glob("build/regard-v3/pool-*.csv"))).drop_duplicates("text")
    pool = soft.merge(pools[["text", "model", "decoding", "suite"]], on="text", how="left")
    if pool["suite"].isna().any():
        raise SystemExit(f"{int(pool['suite'].isna().sum())} pool texts have no source in build/regard-v3/pool-*.csv")
    pool.to_csv(args.out / "pool.csv", index=False)
    for path in sorted(args.out.iterdir()):
        print(path, path.stat().st_size if path.is_file() else "")


if __name__ == "__main__":
    main()
