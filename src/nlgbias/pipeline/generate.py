"""Generate what a run's plan needs and the store lacks, one store transaction per batch.

This is the only place that calls a backend's ``generate`` during a run, so no backend
implements resume itself (the pattern of lm-evaluation-harness's ``CachingLM``).
"""

from __future__ import annotations

from typing import Callable, Generator

import pandas as pd

from nlgbias.models.backend import Backend, GenerationRequest
from nlgbias.sampling import SamplingParams
from nlgbias.store.cache import fill
from nlgbias.store.db import RunStore


def missing_batches(plan: pd.DataFrame, store: RunStore, batch_size: int) -> list[pd.DataFrame]:
    """The fixed batches (per model, in plan order) that hold a sample the store lacks.

    The whole plan is cut into batches of ``batch_size`` and every batch with a missing sample
    is regenerated whole (the store keeps the samples it already has), so a resumed run
    generates exactly the batches an uninterrupted run would: a local model's rounding depends
    on the batch's shape, and rarely that tips a near-tie between two tokens.
    """
    have = store.existing_generations(plan["generation_id"])
    batches = []
    for _, rows in plan.groupby("model", sort=False):
        for start in range(0, len(rows), batch_size):
            batch = rows.iloc[start:start + batch_size]
            if not set(batch["generation_id"]) <= have:
                batches.append(batch)
    return batches


def fill_generations(plan: pd.DataFrame, store: RunStore, *, load: Callable[[str], Backend],
                     params: SamplingParams, batch_size: int, progress: Callable | None = None,
                     remote: Callable[[str, list], Generator[tuple[int, list[str]], None, None] | None] | None = None) -> int:
    """Generate every missing batch of ``plan`` and store each batch in one transaction.

    Local models generate fixed batches (a resumed run is bit-identical); server models
    (backends with ``answer_groups``) get only the missing samples, each stored as it arrives.

    Parameters
    ----------
    plan : pandas.DataFrame
        From :func:`nlgbias.models.plan.plan_samples`.
    store : RunStore
    load : callable
        ``load(model_id) -> Backend``; called only for models with missing samples.
    params : SamplingParams
    batch_size : int
        See :func:`missing_batches`.
    progress : callable, optional
        ``progress(model_id, total) -> bar`` with ``bar.update(n)`` and ``bar.close()``; it counts
        stored samples.
    remote : callable, optional
        ``remote(model_id, batches) -> iterator of (batch index, texts)`` that generates the
        batches (lists of requests) elsewhere, in any order (:mod:`nlgbias.pipeline.distributed`), or
        None for a model it does not run; this process still stores every batch.

    Returns
    -------
    int
        Number of samples generated (a regenerated batch counts whole).
    """
    batches = missing_batches(plan, store, batch_size)
    generated = 0
    by_model: dict[str, list[pd.DataFrame]] = {}
    for batch in batches:
        by_model.setdefault(batch["model"].iloc[0], []).append(batch)
    for model_id, model_batches in by_model.items():
        requests = [[GenerationRequest(prompt, params, int(seed)) for prompt, seed in zip(batch["prompt"], batch["seed"])]
                    for batch in model_batches]
        answers = remote(model_id, requests) if remote else None
        if answers is not None:  # fill closes the generator: it stops its workers if storing failed
            bar = progress(model_id, sum(len(b) for b in model_batches)) if progress else None
            generated += fill(model_batches, answers, _save_batch(model_id, params, store), bar=bar)
            continue
        backend = load(model_id)
        answered = hasattr(backend, "answer_groups")
        if answered:  # server models: only the missing samples, each stored as it arrives
            rows = pd.concat(model_batches)
            rows = rows[~rows["generation_id"].isin(store.existing_generations(rows["generation_id"]))]
        bar = progress(model_id, len(rows) if answered else sum(len(b) for b in model_batches)) if progress else None
        try:
            if answered:
                generated += _fill_as_answered(rows, store, backend, params=params, bar=bar)
                continue
            in_order = ((i, backend.generate(batch)) for i, batch in enumerate(requests))
            generated += fill(model_batches, in_order, _save_batch(model_id, params, store), bar=bar)
        finally:
            backend.close()
    return generated


def _save_batch(model_id: str, params: SamplingParams, store: RunStore):
    """The ``save`` of :func:`~nlgbias.store.cache.fill`: one batch's texts in one transaction."""
    def save(batch: pd.DataFrame, texts: list[str]) -> int:
        store.add_generations(generation_rows(model_id, params, zip(batch["generation_id"], batch["prompt"],
                                                                    batch["seed"], texts)))
        return len(batch)
    return save


def generation_rows(model_id: str, params: SamplingParams, samples) -> list[dict]:
    """Store rows from ``(generation_id, prompt, seed, continuation)`` tuples of one model."""
    settings = params.to_dict()
    return [{"generation_id": gid, "model": model_id, "prompt": prompt, "params": settings, "seed": int(seed),
             "continuation": text} for gid, prompt, seed, text in samples]


def _fill_as_answered(rows: pd.DataFrame, store: RunStore, backend, *, params: SamplingParams, bar) -> int:
    """Server models: request ``rows`` (the missing samples) and store each answer as it arrives.

    A server's sample does not depend on the other requests sent with it, so batches do not
    matter there; what matters is that a request that fails for good loses nothing answered.
    """
    model_id = rows["model"].iloc[0]
    ids, prompts, seeds = list(rows["generation_id"]), list(rows["prompt"]), [int(s) for s in rows["seed"]]
    requests = [GenerationRequest(prompt, params, seed) for prompt, seed in zip(prompts, seeds)]

    def save(_, answers: list[tuple[int, str]]) -> int:
        store.add_generations(generation_rows(model_id, params,
                                              ((ids[i], prompts[i], seeds[i], text) for i, text in answers)))
        return len(answers)

    return fill([rows], ((0, answers) for answers in backend.answer_groups(requests)), save, bar=bar)


__all__ = ["fill_generations", "generation_rows", "missing_batches"]
