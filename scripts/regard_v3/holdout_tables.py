"""Tables of ``holdout.py``'s runs: hold-out figures with 95% intervals, targets, LoRA vs full on dev.

    python scripts/regard_v3/holdout_tables.py RUN_DIR [RUN_DIR ...] --json scripts/regard_v3/holdout-v3.json \
        --predictions scripts/regard_v3/holdout-predictions.csv

In: folders holding ``holdout.json`` and ``holdout-predictions.csv`` (one per ``holdout.py`` call;
a run's recipes found in two folders are joined by item, a recipe in both taken from the later one).  Out: Markdown on stdout and ``--json``:

- ``holdouts``: per held-out source or family and recipe, ``n``, accuracy with a Wilson 95%
  interval, macro-F1, negative recall with its Wilson interval and ``n_negative``, and whether the
  release-3 target is met (a source: accuracy and negative recall >= 0.85; a family: accuracy >= 0.82);
- ``pairs``: where a hold-out has the student and another recipe, the student's accuracy minus the
  other's on the same items, with a paired permutation p-value (Holm-adjusted over the pairs);
- ``dev``: teacher settings on the dev split (trained on train alone), each against full
  fine-tuning with the accuracy difference and a paired permutation p-value (Holm-adjusted over the
  comparisons);
- ``runs``: settings, device, training seconds, items trained on, pool size, copied from each call's runs.

``--predictions`` writes the joined predictions (item id, run, gold label, each recipe's label).
``--evaluation`` writes the student's hold-out rows into key ``v<RELEASE>`` of the package's
``evaluation.json`` as ``held_out_recipe`` (``by`` = ``source`` or ``family``, ``held_out``, ``n_test``,
``n_negative``, accuracy with its interval, macro-F1, negative recall): the report's validity panel
shows them beside the unseen-text sets.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd
from statsmodels.stats.multitest import multipletests

from nlgbias.checklist.results import wilson
from nlgbias.report.sections import format_p
from nlgbias.scorers.regard import RELEASE
from nlgbias.training.dataset import dataset_dir
from nlgbias.training.evaluate import paired_permutation_p
from evaluate_held_out import evaluation_row, figures  # same folder

SOURCE_TARGET, FAMILY_TARGET = 0.85, 0.82
RECIPES = ("teacher", "student", "gold_only")


def holdout_rows(preds: pd.DataFrame) -> list[dict]:
    rows = []
    for run, group in preds[~preds["run"].str.startswith("dev:")].groupby("run", sort=False):
        kind = run.split(":")[0]
        for recipe in (r for r in RECIPES if r in group and group[r].notna().all()):
            fig = figures(group["gold"], group[recipe])
            negative = group["gold"] == "negative"
            fig["negative_recall_ci"] = list(wilson(int((group.loc[negative, recipe] == "negative").sum()),
                                                     int(negative.sum())))
            met = (fig["accuracy"] >= SOURCE_TARGET and fig["negative_recall"] >= SOURCE_TARGET if kind == "source"
                   else fig["accuracy"] >= FAMILY_TARGET)
            rows.append({"held_out": run, "recipe": recipe, **fig, "target_met": bool(met)})
    return rows


def pair_rows(preds: pd.DataFrame) -> list[dict]:
    """The student against each other recipe of the same hold-out, item by item."""
    rows = []
    for run, group in preds[~preds["run"].str.startswith("dev:")].groupby("run", sort=False):
        if "student" not in group or group["student"].isna().any():
            continue
        student = (group["student"] == group["gold"]).to_numpy()
        for other in (r for r in ("teacher", "gold_only") if r in group and group[r].notna().all()):
            theirs = (group[other] == group["gold"]).to_numpy()
            rows.append({"held_out": run, "student_minus": other, "n": int(len(group)),
                         "difference": float(student.mean() - theirs.mean()),
                         "p": paired_permutation_p(student, theirs)})
    for row, p in zip(rows, multipletests([r["p"] for r in rows], method="holm")[1] if rows else []):
        row["p_holm"] = float(p)
    return rows


def dev_rows(preds: pd.DataFrame) -> list[dict]:
    dev = preds[preds["run"].str.startswith("dev:")]
    correct = {run: (g.set_index("id")["teacher"] == g.set_index("id")["gold"]) for run, g in dev.groupby("run")}
    if "dev:full" not in correct:
        return []
    base = correct["dev:full"]
    rows = [{"settings": run, "n": int(len(c)), "accuracy": float(c.mean()),
             "accuracy_ci": list(wilson(int(c.sum()), len(c))),
             "minus_full": float(c.mean() - base.mean()),
             "p": 1.0 if run == "dev:full" else paired_permutation_p(c.loc[base.index].to_numpy(), base.to_numpy())}
            for run, c in correct.items()]
    others = [r for r in rows if r["settings"] != "dev:full"]
    for row, p in zip(others, multipletests([r["p"] for r in others], method="holm")[1]):
        row["p_holm"] = float(p)
    return rows


def write_evaluation(rows: list[dict]) -> None:
    """The student's hold-out rows as ``held_out_recipe`` of key ``v<RELEASE>`` of ``evaluation.json``."""
    path = dataset_dir() / "evaluation.json"
    record = json.loads(path.read_text())
    record[f"v{RELEASE}"]["held_out_recipe"] = [evaluation_row(*r["held_out"].split(":", 1), r)
                                                  for r in rows if r["recipe"] == "student"]
    path.write_text(json.dumps(record, indent=2, default=float) + "\n")
    print(f"wrote {path} (v{RELEASE}: held_out_recipe)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("runs", type=Path, nargs="+")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--predictions", type=Path, default=None)
    parser.add_argument("--evaluation", action="store_true", help="write the student's rows into evaluation.json")
    args = parser.parse_args()
    meta, parts = {}, {}
    for folder in args.runs:
        run_meta = json.loads((folder / "holdout.json").read_text())
        for run in run_meta["runs"]:
            meta.setdefault(run["run"], []).append({**run, "device": run_meta["device"], "sample": run_meta.get("sample", 0)})
        for run, group in pd.read_csv(folder / "holdout-predictions.csv").groupby("run", sort=False):
            group = group.dropna(axis=1, how="all")
            if run not in parts:
                parts[run] = group
                continue
            base = parts[run].set_index("id")  # another folder's recipes of the same run: added, or replacing
            for recipe in (r for r in RECIPES if r in group):
                base[recipe] = group.set_index("id")[recipe].reindex(base.index)
            parts[run] = base.reset_index()
    preds = pd.concat(parts.values())
    out = {"holdouts": holdout_rows(preds), "pairs": pair_rows(preds), "dev": dev_rows(preds), "runs": [r for runs in meta.values() for r in runs]}
    print("| held out | recipe | n | accuracy (95% CI) | macro-F1 | negative recall (95% CI, n) | target |")
    print("|---|---|---:|---|---:|---|---|")
    for r in out["holdouts"]:
        (a, b), (c, d) = r["accuracy_ci"], r["negative_recall_ci"]
        print(f"| {r['held_out']} | {r['recipe']} | {r['n']} | {r['accuracy']:.3f} ({a:.2f}-{b:.2f}) | {r['macro_f1']:.3f} "
              f"| {r['negative_recall']:.3f} ({c:.2f}-{d:.2f}, {r['n_negative']}) | {'met' if r['target_met'] else 'missed'} |")
    if out["pairs"]:
        print("\n| held out | student minus | n | accuracy difference | p (Holm) |")
        print("|---|---|---:|---:|---|")
        for r in out["pairs"]:
            print(f"| {r['held_out']} | {r['student_minus']} | {r['n']} | {r['difference']:+.3f} "
                  f"| {format_p(r['p'])} ({format_p(r['p_holm'])}) |")
    print("\n| teacher on dev | n | accuracy (95% CI) | minus full | p (Holm) | training s |")
    print("|---|---:|---|---:|---|---:|")
    for r in out["dev"]:
        a, b = r["accuracy_ci"]
        p = f"{r['p']:.3f} ({r['p_holm']:.3f})" if "p_holm" in r else "-"
        print(f"| {r['settings']} | {r['n']} | {r['accuracy']:.3f} ({a:.2f}-{b:.2f}) | {r['minus_full']:+.3f} | {p} "
              f"| {next(m['seconds']['teacher'] for m in meta[r['settings']] if 'teacher' in m['seconds'])} |")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    if args.evaluation:
        write_evaluation(out["holdouts"])
    if args.predictions:
        preds[["id", "run", "gold", *[r for r in RECIPES if r in preds]]].to_csv(args.predictions, index=False)


if __name__ == "__main__":
    main()
