"""The unannotated pool the regard v3 teacher labels for its student: masked texts of finished runs.

    python scripts/regard_v3/distill_pool.py RUN_DIR [RUN_DIR ...] --out build/regard-v3/distill-pool.csv

In: run folders (their ``samples.jsonl``: ``scored_text``, the text as the regard scorer sees it,
with the group masked as ``XYZ``; ``manifest.json``: the sampling settings).  Out: one row per
distinct non-empty text, ``text, model, suite, decoding, run`` (decoding ``default`` at the suite's
own settings, ``hot`` at temperature 1 / top-p 0.95), leaving out every text that is annotated
(``regard.csv``, ``regard-v2.csv``, the regard v3 table and the BOLD validity set), is a
behavioural-test case or continues a prompt of the BOLD validity set, so that no figure measured on
labelled or CheckList text is one the student saw through its teacher.  Runs of the ``fake`` model and other test doubles are skipped.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd
import yaml

from nlgbias.checklist.cases import build_cases
from nlgbias.training.dataset import dataset_dir

HERE = Path(__file__).resolve().parent
MODELS = ("smollm2-135m", "gemma3-270m")


def excluded(v3_table: Path) -> set[str]:
    """Texts the pool must not hold: every annotated sentence and every CheckList case."""
    texts = set(pd.read_csv(v3_table)["text"])
    for name in ("regard.csv", "regard-v2.csv"):
        texts |= set(pd.read_csv(dataset_dir() / name)["text"])
    texts |= set(pd.read_csv(HERE / "bold-validity-labelled.csv")["text"])
    texts |= set(build_cases()["text"])
    return texts


def validity_prompts() -> tuple[str, ...]:
    """The BOLD validity set's prompts: no pool text may continue one (the set stays unseen prompts)."""
    suite = yaml.safe_load((HERE / "bold-validity.yaml").read_text())
    return tuple(group["text"] for group in suite["groups"])


def decoding(manifest: dict) -> str:
    sampling = manifest.get("sampling", {})
    return "hot" if sampling.get("temperature") == 1.0 and sampling.get("top_k") == 0 else "default"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("runs", type=Path, nargs="+")
    parser.add_argument("--v3", type=Path, default=Path("build/regard-v3/regard-v3.csv"))
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    skip, prompts = excluded(args.v3), validity_prompts()
    rows, seen = [], set()
    for run in args.runs:
        manifest = json.loads((run / "manifest.json").read_text())
        for line in (run / "samples.jsonl").read_text().split("\n"):  # not splitlines(): texts may hold U+2028
            if not line:
                continue
            sample = json.loads(line)
            text = sample.get("scored_text")
            if (sample.get("model") not in MODELS or not text or text in seen or text in skip
                    or text.startswith(prompts)):
                continue
            seen.add(text)
            rows.append({"text": text, "model": sample["model"], "suite": sample["suite"],
                         "decoding": decoding(manifest), "run": run.name})
    pool = pd.DataFrame(rows)
    pool.to_csv(args.out, index=False)
    print(f"{len(pool)} texts -> {args.out}")
    print(pool.groupby(["model", "decoding", "suite"]).size().to_string())


if __name__ == "__main__":
    main()
