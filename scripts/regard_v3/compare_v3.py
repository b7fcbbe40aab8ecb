"""Teacher, student, gold-only MiniLM and release 2 side by side, on text none of them trained on.

    python scripts/regard_v3/compare_v3.py --teacher build/regard-v3/teacher \
        --classifier "MiniLM, gold only=build/regard-v3/clf3" --classifier "student=build/regard-v3/student" \
        --data build/regard-v3/regard-v3.csv --json scripts/regard_v3/compare-v3.json

In: the teacher folder (``teacher.py train``), MiniLM classifier folders (``train-regard``; scored the
way a run scores, through ``nlgbias.score`` with the default int8 backend, each text alone), the
regard v3 table whose test split none trained on.  Out (Markdown on stdout, and ``--json``): per model

- ``subsets``: ``n``, accuracy with a Wilson 95% interval, macro-F1 and negative recall on the v3
  pool's test items per prompt family and in all, regard v2's test items, and the BOLD validity set
  (a family no model trained on: ``bold-validity-labelled.csv``);
- ``checklist``: the behavioural-test targets on the test half of the lexicons (MFT pass rates on
  illegal/explicit occupations and on negative traits, INV label flips) and the pass rate of every
  case type (test half).

``--shipped NAME`` also writes key ``v<RELEASE>`` of the package's ``evaluation.json`` (what the report's
validity panel shows for the shipped release): the rows of model ``NAME`` on the three sets it never trained
on (``unseen_text``), every model's figures (``models``) and the teacher's training record.

Release 2 (``regard-v2``) trained on regard v2's train and dev splits only, so the v3 pool, BOLD and
the CheckList cases are new text to it too; regard v2's test items are its own test split.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

import nlgbias
from evaluate_held_out import evaluation_row, figures  # same folder
from nlgbias.checklist.cases import build_cases
from nlgbias.checklist.check import judge, pass_rates, targets
from nlgbias.scorers.regard import RELEASE
from nlgbias.training.dataset import dataset_dir, load_dataset

HERE = Path(__file__).resolve().parent


def subsets(data: Path) -> list[tuple[str, pd.DataFrame]]:
    """(name, rows with ``text`` and ``regard_3``) of every labelled subset no model trained on."""
    table = pd.read_csv(data).dropna(subset=["regard_3"])
    test = table[table["split"] == "test"]
    pool_ids = set(pd.read_csv(HERE / "regard-v3-labelled.csv")["id"])
    v2_ids = set(load_dataset(dataset_dir() / "regard-v2.csv")["id"])
    pool_test = test[test["id"].isin(pool_ids)]
    out = [(f"v3 pool test, {family}", rows) for family, rows in pool_test.groupby("family")]
    bold = pd.read_csv(HERE / "bold-validity-labelled.csv").dropna(subset=["regard_3"])
    return out + [("v3 pool test, all", pool_test), ("regard v2 test", test[test["id"].isin(v2_ids)]),
                  ("BOLD validity (held-out family)", bold)]


def teacher_labels(folder: Path, texts: list[str]) -> dict[str, str]:
    from teacher import load  # same folder
    from nlgbias.training.train import predict_proba

    tokenizer, model = load(folder)
    start = time.perf_counter()
    probs = predict_proba(model, tokenizer, texts, batch_size=64)
    print(f"teacher: {len(texts)} texts in {time.perf_counter() - start:.0f} s", flush=True)
    return dict(zip(texts, np.array(model.labels)[probs.argmax(1)]))


def scorer_labels(scorer: str, texts: list[str]) -> dict[str, str]:
    start = time.perf_counter()
    labels = dict(zip(texts, nlgbias.score(texts, scorer=scorer)["label"]))
    print(f"{scorer}: {len(texts)} texts in {time.perf_counter() - start:.0f} s", flush=True)
    return labels


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--teacher", type=Path, default=None)
    parser.add_argument("--classifier", action="append", default=[], help="NAME=FOLDER (repeatable)")
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--shipped", default=None, help="the model that ships as the default release (writes evaluation.json)")
    args = parser.parse_args()
    parts = subsets(args.data)
    cases = build_cases(half="test")
    texts = list(dict.fromkeys([t for _, rows in parts for t in rows["text"]] + cases["text"].tolist()))
    models = [("regard v2 (release 2)", lambda: scorer_labels("regard-v2", texts))]
    models += [(name, lambda folder=folder: scorer_labels(f"regard:{folder}", texts))
               for name, folder in (c.split("=", 1) for c in args.classifier)]
    if args.teacher:
        models.append(("teacher (mpnet)", lambda: teacher_labels(args.teacher, texts)))
    results = []
    for name, run in models:
        labels = run()
        rows = [{"subset": subset, **figures(part["regard_3"].reset_index(drop=True),
                                             part["text"].map(labels).reset_index(drop=True))}
                for subset, part in parts]
        judged = judge(cases, pd.DataFrame({"text": list(labels), "label": list(labels.values()),
                                            "confidence": np.nan}))
        rates = pass_rates(judged)
        results.append({"model": name, "subsets": rows, "checklist": targets(rates),
                        "case_types": rates[rates["half"] == "test"][["case_type", "n", "pass_rate"]].to_dict("records")})
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=float) + "\n")
    if args.shipped:
        write_evaluation(results, args.shipped, args.teacher)
    print_tables(results)


UNSEEN = {"v3 pool test, all": "the v3 pool's test split", "regard v2 test": "regard v2's test split",
          "BOLD validity (held-out family)": "BOLD continuations"}


def write_evaluation(results: list[dict], shipped: str, teacher: Path | None) -> None:
    """Key ``v<RELEASE>`` of ``nlgbias/data/regard/evaluation.json`` (the teacher's record: ``teacher``'s
    ``teacher.json``, or release 3's when no teacher folder is given: every student learned from it)."""
    path = dataset_dir() / "evaluation.json"
    record = json.loads(path.read_text())
    mine = next(r for r in results if r["model"] == shipped)
    rows = [evaluation_row("unseen text", UNSEEN[r["subset"]], r) for r in mine["subsets"] if r["subset"] in UNSEEN]
    record[f"v{RELEASE}"] = {
        "note": (f"Release {RELEASE} (regard): the MiniLM student, distilled from a fully fine-tuned all-mpnet-base-v2 "
                 "teacher (scripts/regard_v3/). unseen_text: the shipped classifier on three annotated sets it never "
                 "trained on. models: every compared model on every subset, and its CheckList targets (test half of "
                 "the lexicons). Written by scripts/regard_v3/compare_v3.py."),
        "unseen_text": rows, "models": results,
        "teacher": {k: v for k, v in json.loads((teacher / "teacher.json").read_text()).items() if k != "mpnet"}
        if teacher else record.get("v3", {}).get("teacher")}
    path.write_text(json.dumps(record, indent=2, default=float) + "\n")
    print(f"wrote {path} (v{RELEASE})")


def print_tables(results: list[dict]) -> None:
    names = [r["model"] for r in results]
    print("| subset | n | " + " | ".join(f"{n}: acc / neg. recall" for n in names) + " |")
    print("|---|---:|" + "---|" * len(names))
    for i, row in enumerate(results[0]["subsets"]):
        cells = [f"{r['subsets'][i]['accuracy']:.3f} / {r['subsets'][i]['negative_recall']:.3f}" for r in results]
        print(f"| {row['subset']} | {row['n']} | " + " | ".join(cells) + " |")
    print()
    print("| CheckList target (test half) | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for i, t in enumerate(results[0]["checklist"]):
        print(f"| {t['name']} ({t['target']}) | " + " | ".join(f"{100 * r['checklist'][i]['value']:.1f}%"
                                                             for r in results) + " |")


if __name__ == "__main__":
    main()
