"""Fill what the store lacks, in one loop: :func:`fill`, for generations, scores and measurements.

Every stage that caches in the run store (generations, :mod:`nlgbias.pipeline.generate`; scores,
:func:`fill_scores`; a probe's measurements, :func:`missing_records` and :func:`save_records`)
finds what the store lacks, cuts it into chunks, has them answered (here, on a Ray pool or by a
server, in any order) and stores each answer in one transaction as it arrives, through :func:`fill`.
A run killed at any point loses at most the chunks in flight; the rerun asks only for those.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Sequence

import pandas as pd

from nlgbias.keys import text_hash
from nlgbias.store.db import RunStore


def fill(chunks: Sequence, answers: Iterator[tuple[int, Any]], save: Callable[[Any, Any], int], *,
         bar=None) -> int:
    """Store each ``(chunk index, answer)`` of ``answers`` as it arrives: ``save(chunks[index], answer)``
    writes one transaction and returns how many items it stored.

    ``bar`` (``update(n)``, ``close()``) counts stored items.  Whatever happens, the bar is closed and
    ``answers`` too, if it can be (a generator that stops its workers).  Returns the items stored.
    """
    stored = 0
    try:
        for index, answer in answers:
            n = save(chunks[index], answer)
            stored += n
            if bar is not None:
                bar.update(n)
    finally:
        if bar is not None:
            bar.close()
        close = getattr(answers, "close", None)
        if close is not None:
            close()
    return stored


def chunked(items: Sequence, size: int) -> list:
    """``items`` cut into consecutive chunks of ``size`` (the last may be shorter).

    >>> chunked([1, 2, 3, 4, 5], 2)
    [[1, 2], [3, 4], [5]]
    """
    return [list(items[start:start + size]) for start in range(0, len(items), size)]


def fill_scores(texts: Sequence[str], scorer, store: RunStore, *, batch_size: int = 512,
                progress: Callable | None = None, remote: Callable | None = None) -> pd.DataFrame:
    """Score the texts the store has no score for, ``batch_size`` per transaction; return every text's score.

    ``remote(scorer, chunks) -> iterator of (chunk index, scored table)`` scores the chunks
    elsewhere, in any order (:meth:`nlgbias.pipeline.distributed.RayPool.score`), when there are at least two
    (for one chunk, starting workers costs more than it saves); this process still stores them.

    Returns
    -------
    pandas.DataFrame
        ``text_hash, label, score, details`` (details as JSON text), one row per distinct text.
    """
    unique = list(dict.fromkeys(texts))
    hashes = [text_hash(t) for t in unique]
    have = store.existing_scores(hashes, scorer.name, scorer.version)
    todo = [(h, t) for h, t in zip(hashes, unique) if h not in have]
    bar = progress(scorer.name, len(todo)) if (progress and todo) else None
    chunks = chunked(todo, batch_size)
    texts_of = [[t for _, t in chunk] for chunk in chunks]
    answers = remote(scorer, texts_of) if remote and len(chunks) > 1 else ((i, scorer.score(t)) for i, t in enumerate(texts_of))

    def save(chunk, scored) -> int:
        store.add_scores([
            {"text_hash": h, "scorer": scorer.name, "scorer_version": scorer.version,
             "label": label, "score": value, "details": details}
            for (h, _), label, value, details in zip(chunk, scored["label"], scored["score"], scored["details"])])
        return len(chunk)

    fill(chunks, answers, save, bar=bar)
    return store.scores(hashes, scorer.name, scorer.version)


def missing_records(keys: Sequence[str], store: RunStore) -> list[int]:
    """Positions in ``keys`` of the first occurrence of each key the store has no record for."""
    have = store.records(keys)
    first: dict[str, int] = {}
    for i, key in enumerate(keys):
        first.setdefault(key, i)
    return [i for key, i in first.items() if key not in have]


def save_records(store: RunStore, kind: str, keys: Sequence[str]) -> Callable[[list[int], list[dict]], int]:
    """The ``save`` of :func:`fill` for measurements: the ``kind`` record of ``keys[i]`` for each position
    ``i`` of a chunk, from the chunk's answer (one dict per position), in one transaction."""
    def save(chunk: list[int], rows: list[dict]) -> int:
        store.add_records(kind, {keys[i]: row for i, row in zip(chunk, rows)})
        return len(chunk)
    return save


__all__ = ["chunked", "fill", "fill_scores", "missing_records", "save_records"]
