"""The shipped regard dataset: loading it (with the user's own annotations appended), and splitting without leaks.

``regard.csv`` has one row per annotated item: ``id, text, context, template_id, group, model,
vader_label``, each annotator's ``regard_<name>`` and ``sentiment_<name>``, the adjudicated
``regard_3``, ``regard_4``, ``sentiment_3``, ``sentiment_4`` (empty where an item has no
majority or its majority is outside the view), and ``split``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from nlgbias.errors import InputError
from nlgbias.keys import cell_seed
from nlgbias.resources import data_path
from nlgbias.scorers.regard import RELEASE

SPLITS = {"train": 0.70, "dev": 0.15, "test": 0.15}
NEAR_DUPLICATE = 0.8
WORD = re.compile(r"[a-z]+")


def dataset_dir() -> Path:
    """Folder of the shipped regard data and classifier."""
    return data_path("regard")


DATA_OF_RELEASE = {1: "regard.csv", 2: "regard-v2.csv"}
DATASET_COLUMNS = ("id", "text", "context", "template_id", "regard_3", "regard_4", "split")


def load_dataset(path: str | Path | None = None) -> pd.DataFrame:
    """The annotated regard dataset (default: the shipped data of the current release, ``regard.csv``
    for release 1, ``regard-v2.csv`` for 2); one-line InputError for a file that is not one."""

    source = Path(path) if path is not None else dataset_dir() / DATA_OF_RELEASE[RELEASE]
    try:
        table = pd.read_csv(source, keep_default_na=False, na_values=[""])
    except (UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise InputError(f"{source}: not a CSV table ({type(exc).__name__})") from None
    missing = [c for c in DATASET_COLUMNS if c not in table.columns]
    if missing:
        raise InputError(f"{source}: missing column {', '.join(repr(c) for c in missing)}; need at least "
                         f"{', '.join(DATASET_COLUMNS)} (like the shipped regard.csv, or the regard.csv that "
                         f"`nlgbias annotate import` writes)")
    return table


def training_data(path: str | Path | None = None, *, extra: Sequence[str | Path] = ()) -> pd.DataFrame:
    """``load_dataset(path)`` with each ``extra`` table appended to its training split.

    An extra table (e.g. the ``regard.csv`` of ``nlgbias annotate import``) adds every row to
    ``split`` ``train``, whatever its own split column says: the base data's dev and test
    splits stay as they were, so test figures remain comparable with the shipped classifier's.
    Ids are prefixed ``extra<k>:`` so they cannot collide with the base data's.
    """
    table = load_dataset(path)
    frames = [table]
    for k, extra_path in enumerate(extra, start=1):
        added = load_dataset(extra_path)
        frames.append(added.assign(split="train", id=f"extra{k}:" + added["id"].astype(str)))
    return pd.concat(frames, ignore_index=True) if len(frames) > 1 else table


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
