"""Generate what a run's plan needs and the store lacks, one store transaction per batch.

This is the only place that calls a backend's ``generate`` during a run, so no backend
implements resume itself (the pattern of lm-evaluation-harness's ``CachingLM``).
"""

from __future__ import annotations

from typing import Callable

import pandas as pd

from nlgbias.models.backend import Backend, GenerationRequest
from nlgbias.sampling import SamplingParams
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
                     params: SamplingParams, batch_size: int, progress: Callable | None = None) -> int:
    """Generate every missing batch of ``plan`` and store each batch in one transaction.

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
        ``progress(model_id, total) -> bar`` with ``bar.update(n)`` and ``bar.close()``.

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
        backend = load(model_id)
        bar = progress(model_id, sum(len(b) for b in model_batches)) if progress else None
        try:
            for batch in model_batches:
                requests = [GenerationRequest(prompt, params, int(seed))
                            for prompt, seed in zip(batch["prompt"], batch["seed"])]
                texts = backend.generate(requests)
                store.add_generations([
                    {"generation_id": gid, "model": model_id, "prompt": prompt, "params": params.to_dict(),
                     "seed": int(seed), "continuation": text}
                    for gid, prompt, seed, text in zip(batch["generation_id"], batch["prompt"], batch["seed"], texts)])
                generated += len(batch)
                if bar:
                    bar.update(len(batch))
        finally:
            if bar:
                bar.close()
            backend.close()
    return generated


__all__ = ["fill_generations", "missing_batches"]
