"""The shipped regard dataset: loading it (with the user's own annotations appended), and splitting without leaks.

``regard.csv`` has one row per annotated item: ``id, text, context, template_id, group, model,
vader_label``, each annotator's ``regard_<name>`` and ``sentiment_<name>``, the adjudicated
``regard_3``, ``regard_4``, ``sentiment_3``, ``sentiment_4`` (empty where an item has no
majority or its majority is outside the view), and ``split``.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from nlgbias.errors import InputError
from nlgbias.keys import cell_seed
from nlgbias.resources import data_path
from nlgbias.scorers.regard import RELEASE
from nlgbias.validate import within

SPLITS = {"train": 0.70, "dev": 0.15, "test": 0.15}
NEAR_DUPLICATE = 0.8
WORD = re.compile(r"[a-z]+")


def dataset_dir() -> Path:
    """Folder of the shipped regard data and classifier."""
    return data_path("regard")


DATA_OF_RELEASE = {1: "regard.csv", 2: "regard-v2.csv", 3: "regard-v3.csv", 4: "regard-v3.csv"}
DATASET_COLUMNS = ("id", "text", "context", "template_id", "regard_3", "regard_4", "split")


def load_dataset(path: str | Path | None = None) -> pd.DataFrame:
    """The annotated regard dataset (default: the shipped data of the current release, ``regard.csv``
    for release 1, ``regard-v2.csv`` for 2, ``regard-v3.csv`` for 3); one-line InputError for a file
    that is not one."""

    source = Path(path) if path is not None else dataset_dir() / DATA_OF_RELEASE[RELEASE]
    table = _read_table(source, DATASET_COLUMNS, f"need at least {', '.join(DATASET_COLUMNS)} (like the shipped "
                        "regard.csv, or the regard.csv that `nlgbias annotate import` writes)")
    check_labels(table, source)
    return table


LABEL_VALUES = {"regard_3": ("negative", "neutral", "positive"), "regard_4": ("negative", "neutral", "positive", "other")}


def check_labels(table: pd.DataFrame, path: Path) -> None:
    """Raise one :class:`InputError` line ``<path>:<line>: regard_3 label 'great' is not one of ...`` for
    the first label outside :data:`LABEL_VALUES` (an empty cell, no majority, is allowed): such a
    row used to be dropped from training without a word."""
    for column, allowed in LABEL_VALUES.items():
        values = table[column]
        bad = values.notna() & ~values.isin(allowed)
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise InputError(f"{path}:{_csv_line(path, row)}: {column} label {values.iloc[row]!r} is not one of "
                             f"{', '.join(allowed)} (leave the cell empty for an item without a majority)")


def _csv_line(path: Path, row: int) -> int:
    """The line of ``path`` on which data row ``row`` (0: the first after the header) starts."""
    with open(path, encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle)
        start = 1
        for index, _ in enumerate(reader):
            if index == row + 1:
                return start
            start = reader.line_num + 1
    return row + 2


def _read_table(path: Path, columns: Sequence[str], need: str) -> pd.DataFrame:
    """A CSV table with ``columns`` (empty cells NaN); one-line InputError naming the file otherwise."""
    try:
        table = pd.read_csv(path, keep_default_na=False, na_values=[""])
    except (UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise InputError(f"{path}: not a CSV table ({type(exc).__name__})") from None
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise InputError(f"{path}: missing column {', '.join(repr(c) for c in missing)}; {need}")
    return table


SOFT_OF_RELEASE = {3: "regard-v3-teacher.csv", 4: "regard-v4-teacher.csv"}  # the teacher's soft labels the release's 3-class student learned from
SOFT_COLUMNS = ("text", "p_negative", "p_neutral", "p_positive")


def load_soft(path: str | Path | None = None, *, default: bool = False) -> pd.DataFrame | None:
    """Teacher soft labels (``text, p_negative, p_neutral, p_positive``, rows summing to 1) from
    ``path``; without a path, the current release's shipped file when ``default`` (None if it has
    none); one-line InputError for a file that is not one."""

    if path is None:
        if not default or RELEASE not in SOFT_OF_RELEASE:
            return None
        path = dataset_dir() / SOFT_OF_RELEASE[RELEASE]
    table = _read_table(Path(path), SOFT_COLUMNS, f"need {', '.join(SOFT_COLUMNS)}")
    probs = table[list(SOFT_COLUMNS[1:])].apply(pd.to_numeric, errors="coerce")
    bad = probs.isna().any(axis=1) | (probs < 0).any(axis=1) | ((probs.sum(axis=1) - 1).abs() > 1e-3)
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise InputError(f"{path}: row {row + 2}: the probabilities must be numbers from 0 to 1 that sum to 1")
    return table.assign(**{c: probs[c] for c in SOFT_COLUMNS[1:]})


OWN_TEST = "own_test"  # the split of the user's items held out to measure the classifier on their own text
OWN_TEST_SHARE = 0.2


def training_data(path: str | Path | None = None, *, extra: Sequence[str | Path] = (),
                  holdout: float = OWN_TEST_SHARE, seed: int = 0) -> pd.DataFrame:
    """``load_dataset(path)`` with each ``extra`` table appended to its training split.

    An extra table (e.g. the ``regard.csv`` of ``nlgbias annotate import``) adds its rows to
    ``split`` ``train``, whatever its own split column says, except a seeded share ``holdout`` of
    them (whole clusters of near-duplicate texts, rounded down: none of a table under
    ``1 / holdout`` rows), which go to split :data:`OWN_TEST`: never trained on, they measure the
    classifier on the user's own kind of text.  The base data's dev and test splits stay as they
    were, so test figures remain comparable with the shipped classifier's.  Ids are prefixed
    ``extra<k>:`` so they cannot collide with the base data's.
    """
    within(holdout, 0, 1, "holdout", closed=True, example="0.2")
    table = load_dataset(path)
    frames = [table]
    for k, extra_path in enumerate(extra, start=1):
        added = load_dataset(extra_path)
        split = pd.Series("train", index=added.index)
        split[held_out(added["text"].astype(str).tolist(), holdout, seed=seed)] = OWN_TEST
        frames.append(added.assign(split=split.to_numpy(), id=f"extra{k}:" + added["id"].astype(str)))
    return pd.concat(frames, ignore_index=True) if len(frames) > 1 else table


def held_out(texts: list[str], share: float, *, seed: int = 0) -> np.ndarray:
    """A boolean mask of the ``texts`` to hold out: ``floor(share * len(texts))`` of them at most, whole
    clusters of near-duplicates in a seeded order (so no held-out text has a twin in training).

    >>> int(held_out(["XYZ was a nurse.", "XYZ was a nurse!", "XYZ was rude.", "XYZ sang."], 0.5).sum())
    2
    """
    want = int(np.floor(share * len(texts) + 1e-9))
    mask = np.zeros(len(texts), dtype=bool)
    if want == 0:
        return mask
    clusters = np.array(near_duplicate_clusters(texts))
    order = sorted(set(clusters.tolist()), key=lambda c: cell_seed(seed, "own_test", texts[c]))
    for cluster in order:
        members = clusters == cluster
        if mask.sum() + members.sum() <= want:
            mask |= members
        if mask.sum() == want:
            break
    return mask


def extra_counts(data: pd.DataFrame, classes: int) -> list[dict]:
    """How the user's items of each ``--extra-data`` table were used, from :func:`training_data`'s table.

    One dict per table (``extra``: its number): ``rows``; ``labelled`` (with a ``regard_<classes>``
    label of the view, so usable); ``train`` and ``held_out`` (of those); ``left_out``
    (``rows - labelled``: ties, another view's label, or blank).
    """
    from nlgbias.training.experiment import LABELS

    out = []
    ids = data["id"].astype(str)
    for k in sorted({int(i.split(":", 1)[0][len("extra"):]) for i in ids if re.match(r"extra\d+:", i)}):
        rows = data[ids.str.startswith(f"extra{k}:")]
        labelled = rows[rows[f"regard_{classes}"].isin(LABELS[classes])]
        out.append({"extra": k, "rows": int(len(rows)), "labelled": int(len(labelled)),
                    "train": int((labelled["split"] == "train").sum()),
                    "held_out": int((labelled["split"] == OWN_TEST).sum()),
                    "left_out": int(len(rows) - len(labelled))})
    return out


def word_set(text: str) -> frozenset[str]:
    """Lower-cased words of a text, digits and punctuation dropped (what near-duplicates share)."""
    return frozenset(WORD.findall(text.lower()))


def near_duplicate_clusters(texts: list[str], *, threshold: float = NEAR_DUPLICATE) -> list[int]:
    """Cluster id per text: texts whose word sets have Jaccard similarity >= ``threshold`` (directly or
    through a chain) share a cluster.

    >>> near_duplicate_clusters(["XYZ was a nurse.", "XYZ was a nurse!", "XYZ sold 3 cars in 2001."])
    [0, 0, 2]
    """
    sets = [word_set(t) for t in texts]
    parent = list(range(len(texts)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    by_size = sorted(range(len(sets)), key=lambda i: len(sets[i]))
    for position, i in enumerate(by_size):
        for j in by_size[position + 1:]:
            if len(sets[i]) < threshold * len(sets[j]):
                break  # sizes only grow from here: Jaccard is bounded by |small| / |large|
            union = len(sets[i] | sets[j])
            if union and len(sets[i] & sets[j]) / union >= threshold:
                parent[root(j)] = root(i)
    roots = [root(i) for i in range(len(texts))]
    first_member: dict[int, int] = {}
    for i, r in enumerate(roots):
        first_member.setdefault(r, i)
    return [first_member[r] for r in roots]


def assign_splits(table: pd.DataFrame, *, stratify: list[str], seed: int = 0,
                  shares: dict[str, float] = SPLITS) -> pd.Series:
    """A split per row: stratified by ``stratify`` columns, near-duplicates kept together.

    Clusters of near-duplicate texts move as one unit, assigned with the stratum of their first
    member; within a stratum, clusters are shuffled (seeded) and each goes to the split furthest
    below its target share.
    """
    clusters = near_duplicate_clusters(table["text"].tolist())
    table = table.assign(_cluster=clusters)
    first = table.drop_duplicates("_cluster")
    names = list(shares)
    split_of_cluster: dict[int, str] = {}
    for key, stratum in first.groupby(stratify, sort=True, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        rng = np.random.default_rng(cell_seed(seed, *key))
        order = rng.permutation(len(stratum))
        counts = dict.fromkeys(names, 0)
        for position in order:
            cluster = int(stratum.iloc[position]["_cluster"])
            size = int((table["_cluster"] == cluster).sum())
            total = sum(counts.values()) + size
            deficit = {n: shares[n] * total - counts[n] for n in names}
            chosen = max(names, key=lambda n: (deficit[n], -names.index(n)))
            split_of_cluster[cluster] = chosen
            counts[chosen] += size
    return table["_cluster"].map(split_of_cluster).rename("split")
