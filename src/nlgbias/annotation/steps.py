"""The two file steps of the annotation workflow, as ``nlgbias annotate sample|import`` run them.

``sample_run``: a finished run's folder -> items, one sheet per annotator, guidelines.
``import_labels``: filled sheets + items -> labels, agreement, majority labels, correlations,
``regard.csv`` (the table that ``nlgbias train-regard --data`` or ``--extra-data`` trains on), and
the shipped regard classifier's accuracy against the majority labels.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Sequence

import pandas as pd

from nlgbias.annotation.agreement import adjudicate, agreement, correlation_table
from nlgbias.annotation.classifier_check import classifier_check
from nlgbias.annotation.sample import annotation_sample, low_confidence_sample
from nlgbias.annotation.sheets import export_sheets, read_items, sheet_labels
from nlgbias.errors import InputError, option
from nlgbias.inputs import not_a_file, read_parquet_file
from nlgbias.safe_names import check_file_names
from nlgbias.store.export import write_csv, write_json
from nlgbias.store.lock import refuse_if_held
from nlgbias.validate import check_out_folder


def sample_run(run_folder: str | Path, out: str | Path, *, k_positive: int = 3, k_negative: int = 3,
               k_neutral: int = 0, k_low: int | None = None, annotators: Sequence[str] = ("a1", "a2", "a3"),
               fmt: str = "csv", seed: int = 0) -> tuple[pd.DataFrame, list[Path]]:
    """Sample a run's generations per (model, template, group) and write the sheets to ``out``.

    ``k_low``: instead of VADER strata, up to that many low-confidence regard texts per cell.
    Returns the items and the paths written.
    """

    source = Path(run_folder) / "samples.parquet"
    if Path(run_folder).is_dir():
        refuse_if_held(run_folder)  # a run still writing it: its samples may be the last run's or half written
    if not source.is_file():
        raise InputError(f"{source}: missing; give the --out folder of a finished `nlgbias run`")
    check_file_names(annotators, option("--annotators").rstrip("="), pattern=f"sheet-{{}}.{fmt}")
    out = check_out_folder(out)
    for name, k in (("--k-positive", k_positive), ("--k-negative", k_negative), ("--k-neutral", k_neutral),
                    ("--low-confidence", k_low or 0)):
        if k < 0:
            raise InputError(f"{option(name, k, keyword='k_low' if name == '--low-confidence' else None)}: "
                             "must be 0 or more")
    if k_low is None and k_positive == k_negative == k_neutral == 0:
        raise InputError(f"{', '.join(option(f) for f in ('--k-positive', '--k-negative', '--k-neutral'))}: all are 0, "
                         "so nothing would be sampled")
    samples = read_parquet_file(source)
    if k_low is not None:
        if "regard_details" not in samples.columns:
            raise InputError(f"{source}: has no regard_details column; run with --scorer regard")
        items = low_confidence_sample(samples, k=k_low, seed=seed)
    elif "vader_label" not in samples.columns:
        raise InputError(f"{source}: has no vader_label column; run with --scorer vader")
    else:
        items = annotation_sample(samples, k_positive=k_positive, k_negative=k_negative, k_neutral=k_neutral,
                                  seed=seed)
    return items, export_sheets(items, Path(out), annotators=list(annotators), fmt=fmt, seed=seed)


def training_table(items: pd.DataFrame, labels: pd.DataFrame, *, seed: int = 0) -> pd.DataFrame:
    """Items + checked labels -> the regard training table, in the shipped ``regard.csv``'s layout.

    One row per item: the item's columns (``id, text, context, template_id, group, model,
    vader_label`` ...), every annotator's ``regard_<name>`` and ``sentiment_<name>``, the majority
    labels ``regard_3, regard_4, sentiment_3, sentiment_4`` (ties dropped: empty), and ``split``
    (70/15/15 per template and 4-class label, near-duplicates kept together, seeded).
    """
    from nlgbias.training.dataset import assign_splits  # the training package loads torch

    table = items.copy()
    if "text" not in table.columns:
        raise InputError("items: no text column, so the labels cannot become training data; give the items.csv "
                         "that `nlgbias annotate sample` wrote")
    if "template_id" not in table.columns:
        table["template_id"] = table["context"]
    annotators = list(dict.fromkeys(labels["annotator"]))
    for column in ("regard", "sentiment"):
        wide = labels.pivot(index="id", columns="annotator", values=column)
        for name in annotators:
            table[f"{column}_{name}"] = table["id"].map(wide[name])
        for classes in (3, 4):
            majority = adjudicate(labels, column, classes=classes, ties="drop")
            table[f"{column}_{classes}"] = table["id"].map(majority.set_index("id")["label"])
    stratum = table["regard_4"].fillna("none")
    table["split"] = assign_splits(table.assign(stratum=stratum), stratify=["template_id", "stratum"], seed=seed)
    return table


def import_labels(sheets: Sequence[str | Path], *, items_path: str | Path, out: str | Path,
                  ties: Literal["drop", "mark"] = "drop", allow_blank: bool = False, check_classifier: bool = True,
                  seed: int = 0) -> dict:
    """Check filled sheets against ``items_path`` and write, into ``out``: ``labels.csv``,
    ``agreement.json``, ``{regard,sentiment}-{3,4}class.csv`` (majority labels with each item's
    text and metadata), ``correlations.csv``, ``regard.csv`` (:func:`training_table`, split with
    ``seed``) and, unless ``check_classifier`` is false, ``classifier-check.json`` and
    ``classifier-check.csv`` (:func:`nlgbias.annotation.classifier_check.classifier_check`).

    ``allow_blank``: accept partial sheets (see :func:`nlgbias.annotation.import_sheets`).

    Returns
    -------
    dict
        ``sheets`` (per sheet: ``file, annotator, labelled, blank, missing``), ``agreement`` (per
        label column, :func:`agreement`'s figures), ``majority`` (per task: ``task, items, ties,
        other, kept``), ``classifier`` (per scorer) and ``files`` (the paths written).
    """
    items_path = Path(items_path)
    if ties not in ("drop", "mark"):
        raise InputError(f"{option('--ties', ties)}: use drop or mark")
    if not items_path.is_file():
        raise InputError(f"{option('--items', str(items_path), keyword='items_path')}: {not_a_file(items_path)}")
    items = read_items(items_path)

    out = check_out_folder(out)
    labels, sheet_counts = sheet_labels([Path(s) for s in sheets], items=items, allow_blank=allow_blank)
    training = training_table(items, labels, seed=seed)  # checked before anything is written
    out.mkdir(parents=True, exist_ok=True)
    files = [write_csv(out / "labels.csv", labels)]
    figures = {column: agreement(labels, column) for column in ("regard", "sentiment")}
    files.append(write_json(out / "agreement.json", figures))
    adjudicated, tasks = {}, []
    item_columns = [c for c in items.columns if c != "id"]
    for column in ("regard", "sentiment"):
        for classes in (3, 4):
            marked = adjudicate(labels, column, classes=classes, ties="mark")
            table = marked if ties == "mark" else marked[marked["label"] != "tie"].reset_index(drop=True)
            adjudicated[(column, classes)] = table
            voted = labels.dropna(subset=[column])["id"].nunique()
            n_ties = int((marked["label"] == "tie").sum())
            tasks.append({"task": f"{column}-{classes}class", "items": int(voted), "ties": n_ties,
                          "other": int(voted - len(marked)), "kept": int(len(marked) - n_ties)})
            files.append(write_csv(out / f"{column}-{classes}class.csv", table.merge(items, on="id", how="left")
                                   [list(table.columns) + item_columns]))
    files.append(write_csv(out / "correlations.csv",
                           correlation_table(items, adjudicated[("regard", 3)], adjudicated[("sentiment", 3)])))
    files.append(write_csv(out / "regard.csv", training))
    checks: list[dict] = []
    if check_classifier:
        checks, compared = classifier_check(items, adjudicated)
        files.append(write_json(out / "classifier-check.json", checks))
        files.append(write_csv(out / "classifier-check.csv", compared))
    return {"sheets": sheet_counts.to_dict("records"), "agreement": figures, "majority": tasks,
            "classifier": checks, "files": files}


__all__ = ["import_labels", "sample_run", "training_table"]
