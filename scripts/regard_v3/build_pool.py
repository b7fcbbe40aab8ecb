"""Build the unlabelled regard v3 sets from the generated runs (run once by the maintainers).

    python scripts/regard_v3/build_pool.py --runs runs/regard-v3

In: every ``<run>/samples.parquet`` under ``--runs`` that ``generate.sh`` wrote (folder name =
``<model>-<decoding>-<family>``) and the suite files next to this script. Out, next to this script:

- ``pool-v3.csv`` (``id, text, source, model, decoding, family, context, template_id, group,
  selection, generation_id``): every distinct readable masked first sentence of the pool runs.
  The group is masked as ``XYZ`` (by the run for suite groups; here for BOLD, whose prompts begin
  with a person's name). Texts are deduplicated after normalisation (``normalise``: case, spaces,
  final punctuation) against each other, a text that two runs produced staying with the first
  in ``ORDER``, and against the regard v1 and v2 datasets. ``selection`` is ``all``: no
  classifier or rule chose among them, and nothing here is a label.
- ``bold-validity.csv`` (``id, domain, subgroup, prompt, text, model, decoding, seed``): the BOLD
  continuations, first sentence of prompt + continuation, unmasked.
- ``sheets/v3-partNN.csv`` and ``sheets/bold-partNN.csv``: ``id, text`` only, shuffled with
  ``--seed``, about ``--chunk`` rows each, for annotators who should see nothing but the sentence.

Gemma 3 special tokens that reach the decoded text (``<start_of_image>``) end it, as an
end-of-sequence token would; HTML the model wrote (``<em>``) is kept as written.
Dropped before deduplication, counted in the printout: ``empty`` (no continuation), ``no_words``
(the continuation adds no word of two or more letters to the first sentence, e.g. "XYZ was
caught."), ``symbols`` (under half of the continuation's visible characters are letters or digits) and
``non_latin`` (under half of its letters are A-Z).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from nlgbias.annotation.sample import item_id
from nlgbias.text import first_sentence, mask_group

HERE = Path(__file__).resolve().parent
DATA = HERE.parents[1] / "src" / "nlgbias" / "data" / "regard"
ORDER = [  # generation order: a duplicate text stays with its first run
    "smollm2-default-sources", "smollm2-hot-sources", "gemma-default-sources", "gemma-hot-sources",
    "smollm2-hot-holistic", "gemma-default-holistic", "smollm2-hot-bold", "gemma-default-bold",
]
VALIDITY = "smollm2-default-validity"
SUITES = {"sources": "sources.yaml", "holistic": "holistic.yaml", "bold": "bold-pool.yaml",
          "validity": "bold-validity.yaml"}
POOL_COLUMNS = ["id", "text", "source", "model", "decoding", "family", "context", "template_id", "group",
                "selection", "generation_id"]
VALIDITY_COLUMNS = ["id", "domain", "subgroup", "prompt", "text", "model", "decoding", "seed"]
WORD = re.compile(r"[A-Za-z\u00C0-\u024F]{2,}")
# Gemma 3 special tokens that reach the decoded text (e.g. "...Roosevelt.<start_of_image>But when"):
# the text ends there, as at an end-of-sequence token.
SPECIAL = re.compile(r"<(?:start_of_image|end_of_image|start_of_turn|end_of_turn|eos|bos|pad|mask|unused\d+)>")


def cut_special(text: str) -> str:
    """``text`` up to the first special token, cut again to its first sentence.

    >>> cut_special("XYZ was a nurse.<start_of_image>But then")
    'XYZ was a nurse.'
    """
    found = SPECIAL.search(text)
    return first_sentence(text[: found.start()]) if found else text


def groups_of(suite_file: str) -> dict[str, dict]:
    """Group id -> ``{text, attributes}`` of a suite file next to this script."""
    suite = yaml.safe_load((HERE / suite_file).read_text(encoding="utf-8"))
    return {g["id"]: {"text": g["text"], **g["attributes"]} for g in suite["groups"]}


def entity_name(entity: str) -> str:
    """BOLD's entity key as it is written in text: ``Alfred_D._Crimi`` -> ``Alfred D. Crimi``."""
    return re.sub(r"\s*\(.*\)$", "", entity.replace("_", " ")).strip()


def unreadable(prompt: str, sentence: str, is_empty: bool) -> str:
    """Why a first sentence is dropped before annotation (``""``: kept); see the module docstring."""
    if is_empty:
        return "empty"
    added = sentence[len(prompt):] if sentence.startswith(prompt) else ""
    if not WORD.search(added):
        return "no_words"
    visible = [c for c in added if not c.isspace()]
    if sum(c.isalnum() for c in visible) < 0.5 * len(visible):
        return "symbols"
    letters = [c for c in visible if c.isalpha()]
    if sum(c.isascii() for c in letters) < 0.5 * len(letters):
        return "non_latin"
    return ""


def load_run(folder: Path) -> pd.DataFrame:
    """One run's samples with the pool columns (before deduplication) and a ``dropped`` reason."""
    model_short, decoding, family = folder.name.split("-", 2)
    s = pd.read_parquet(folder / "samples.parquet")
    groups = groups_of(SUITES[family])
    s["sentence"] = s["sentence"].map(cut_special)
    text = s["scored_text"].map(cut_special)
    group = s["group"].copy()
    if family == "bold":  # the run masked the whole prompt: mask the person's name instead
        names = s["group"].map(lambda g: entity_name(groups[g]["entity"]))
        text = pd.Series([mask_group(t, n) for t, n in zip(s["sentence"], names)], index=s.index)
        group = s["group"].map(lambda g: f"{groups[g]['axis']}/{groups[g]['subgroup']}")
    elif family == "holistic":
        group = s["group"].map(lambda g: groups[g]["text"].removeprefix("The "))
    frame = pd.DataFrame({
        "text": text, "source": f"{model_short}/{decoding}", "model": s["model"], "decoding": decoding,
        "family": s["context"].map(lambda c: "steer" if c == "steer" else "sheng") if family == "sources" else family,
        "context": s["context"], "template_id": s["template_id"], "group": group, "selection": "all",
        "generation_id": s["generation_id"], "run": folder.name,
        "dropped": [unreadable(p, t, e) for p, t, e in zip(s["prompt"], s["sentence"], s["is_empty"].astype(bool))],
    })
    frame["id"] = frame["text"].map(item_id)
    return frame


def build_pool(runs: Path) -> tuple[pd.DataFrame, dict[str, object]]:
    """The deduplicated pool and the counts of each step."""
    frames = [load_run(runs / name) for name in ORDER if (runs / name / "samples.parquet").exists()]
    raw = pd.concat(frames, ignore_index=True)
    counts: dict[str, object] = {"generated": len(raw), "generated_by_run": raw.groupby("run", sort=False).size().to_dict(),
                                 "dropped": raw.loc[raw["dropped"] != "", "dropped"].value_counts().to_dict()}
    kept = raw[raw["dropped"] == ""]
    distinct = kept.drop_duplicates("id", keep="first")
    counts["duplicates_within"] = len(kept) - len(distinct)
    known = set(pd.read_csv(DATA / "regard-v2.csv", usecols=["text"])["text"].map(item_id))
    known |= set(pd.read_csv(DATA / "regard.csv", usecols=["text"])["text"].map(item_id))
    pool = distinct[~distinct["id"].isin(known)]
    counts["duplicates_of_v1_v2"] = len(distinct) - len(pool)
    counts["pool"] = len(pool)
    pool = pool.sort_values(["source", "family", "template_id", "id"], kind="stable")
    return pool[POOL_COLUMNS].reset_index(drop=True), counts


def build_validity(runs: Path) -> tuple[pd.DataFrame, dict[str, object]]:
    """The BOLD validity set (unmasked first sentences) and the counts of each step."""
    folder = runs / VALIDITY
    s = pd.read_parquet(folder / "samples.parquet")
    groups = groups_of(SUITES["validity"])
    s["sentence"] = s["sentence"].map(cut_special)
    dropped = pd.Series([unreadable(p, t, e) for p, t, e in zip(s["prompt"], s["sentence"], s["is_empty"].astype(bool))],
                        index=s.index)
    frame = pd.DataFrame({
        "id": s["sentence"].map(item_id), "domain": s["group"].map(lambda g: groups[g]["axis"]),
        "subgroup": s["group"].map(lambda g: groups[g]["subgroup"]), "prompt": s["prompt"], "text": s["sentence"],
        "model": s["model"], "decoding": VALIDITY.split("-")[1], "seed": s["seed"],
    })
    counts: dict[str, object] = {"generated": len(frame), "dropped": dropped[dropped != ""].value_counts().to_dict()}
    frame = frame[dropped == ""]
    distinct = frame.drop_duplicates("id", keep="first")
    counts["duplicates_within"] = len(frame) - len(distinct)
    counts["validity"] = len(distinct)
    return distinct.sort_values(["domain", "subgroup", "id"], kind="stable")[VALIDITY_COLUMNS].reset_index(drop=True), counts


def write_sheets(items: pd.DataFrame, prefix: str, folder: Path, *, seed: int, chunk: int) -> list[int]:
    """Shuffle ``items`` (``id, text``) with ``seed`` and write ``<prefix>-partNN.csv`` of about ``chunk`` rows."""
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob(f"{prefix}-part*.csv"):
        old.unlink()
    order = np.random.default_rng(seed).permutation(len(items))
    shuffled = items.iloc[order][["id", "text"]]
    n_parts = max(1, round(len(shuffled) / chunk))
    if len(shuffled) > 1.2 * chunk * n_parts:  # 391 rows: two sheets, not one of 391
        n_parts += 1
    parts = np.array_split(np.arange(len(shuffled)), n_parts)
    for n, rows in enumerate(parts, 1):
        shuffled.iloc[rows].to_csv(folder / f"{prefix}-part{n:02d}.csv", index=False)
    return [len(rows) for rows in parts]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=Path, default=Path("runs/regard-v3"))
    parser.add_argument("--out", type=Path, default=HERE)
    parser.add_argument("--seed", type=int, default=3, help="Shuffle seed of the annotation sheets.")
    parser.add_argument("--chunk", type=int, default=300, help="Rows per annotation sheet (about).")
    args = parser.parse_args()
    pool, pool_counts = build_pool(args.runs)
    pool.to_csv(args.out / "pool-v3.csv", index=False)
    validity, validity_counts = build_validity(args.runs)
    validity.to_csv(args.out / "bold-validity.csv", index=False)
    sheets = args.out / "sheets"
    print("pool", pool_counts)
    print("pool sheets", write_sheets(pool, "v3", sheets, seed=args.seed, chunk=args.chunk))
    print(pool.groupby(["source", "family"]).size().unstack(fill_value=0).to_string())
    print(pool.groupby(["family", "template_id"]).size().to_string())
    print("validity", validity_counts)
    print("validity sheets", write_sheets(validity, "bold", sheets, seed=args.seed, chunk=args.chunk))
    print(validity.groupby(["domain", "subgroup"]).size().to_string())


if __name__ == "__main__":
    main()
