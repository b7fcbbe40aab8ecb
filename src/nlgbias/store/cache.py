"""The score cache: score only the texts the store has no score for (by text hash and scorer version).

Generation is filled by the run layer (:mod:`nlgbias.pipeline.generate`); the store only stores.
"""

from __future__ import annotations

from typing import Callable, Sequence

import pandas as pd

from nlgbias.keys import text_hash
from nlgbias.store.db import RunStore


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
    chunks = [todo[start:start + batch_size] for start in range(0, len(todo), batch_size)]
    texts_of = [[t for _, t in chunk] for chunk in chunks]
    answers = remote(scorer, texts_of) if remote and len(chunks) > 1 else ((i, scorer.score(t)) for i, t in enumerate(texts_of))
    try:
        for index, scored in answers:
            chunk = chunks[index]
            store.add_scores([
                {"text_hash": h, "scorer": scorer.name, "scorer_version": scorer.version,
                 "label": label, "score": value, "details": details}
                for (h, _), label, value, details in zip(chunk, scored["label"], scored["score"], scored["details"])])
            if bar:
                bar.update(len(chunk))
    finally:
        if bar:
            bar.close()
        answers.close()
    return store.scores(hashes, scorer.name, scorer.version)
