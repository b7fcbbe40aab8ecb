"""Templated sentences from the **train half** of the behavioural-test lexicons, for the teacher to label.

    python scripts/regard_v3/distill_templates.py --out build/regard-v3/pool-templates.csv

The student learns what the teacher does on the case types the annotated data barely covers:
positive framing of illegal and explicit work and esteemed roles ended by wrongdoing.  Out:
``text, model, suite, decoding, run`` (``model`` ``template``, ``suite`` the case type), every
sentence of the train half's INV and DIR cases that the regard v3 table does not hold, plus every
combination the case builder samples from (each illegal or explicit job with every positive
framing; each esteemed role with every negative event), one occupation template and setting per
combination, chosen by a seeded hash as the case builder does.  Only train-half entries are used,
so the test half stays unseen; nothing here carries a label.

**Negation is left out** (denied traits, cleared accusations: ``NOT_DISTILLED``): the teacher
fails it (41% and 0% of the test half's cases pass), so its labels there would teach the student
the error.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from nlgbias.checklist.cases import _Builder, _job, _pick, _sentence, build_cases

HALF = "train"
NOT_DISTILLED = ("dir_negation_trait", "dir_negation_event")  # the teacher gets these wrong


def combinations() -> list[tuple[str, str]]:
    """(case type, sentence) for every train-half combination of the two case types."""
    b = _Builder(HALF)
    rows = []
    for job in b.lex["illegal_explicit_occupations"]:
        for framing in b.lex["positive_framings"]:
            key = f"distill|{job.key}|{framing.key}"
            t = _pick(b.occupation, 1, key)[0]
            clause = _job(t, job, b._setting(key))
            rows += [("inv_framing_illegal_job", _sentence(clause)), ("inv_framing_illegal_job", _sentence(clause, framing.value))]
    for event in b.lex["negative_events"]:
        for role in b.lex["admired_roles"]:
            key = f"distill|{event.key}|{role.key}"
            t = _pick(b._templates_for("admired_roles", until=True), 1, key)[0]
            rows.append(("dir_negative_event_admired", _sentence(_job(t, role), f"until being {event.value['event']}")))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--v3", type=Path, default=Path("build/regard-v3/regard-v3.csv"))
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    cases = build_cases(half=HALF)
    cases = cases[(cases["test"] != "MFT") & ~cases["case_type"].isin(NOT_DISTILLED)]
    rows = list(zip(cases["case_type"], cases["text"])) + combinations()
    table = pd.DataFrame(rows, columns=["suite", "text"]).drop_duplicates("text")
    table = table[~table["text"].isin(set(pd.read_csv(args.v3)["text"]))]
    table = table.assign(model="template", decoding="", run="train half")[["text", "model", "suite", "decoding", "run"]]
    table.to_csv(args.out, index=False)
    print(f"{len(table)} sentences -> {args.out}")
    print(table.groupby("suite").size().to_string())


if __name__ == "__main__":
    main()
