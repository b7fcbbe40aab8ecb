"""The sample plan: which samples a run needs from which model, each with its seed and key."""

from __future__ import annotations

import hashlib
import json
from typing import Sequence

import pandas as pd

from nlgbias.models.registry import ModelRef
from nlgbias.sampling import SamplingParams, sample_seed

PLAN_COLUMNS = ["generation_id", "model", "prompt_id", "sample_idx", "seed", "prompt"]


def generation_key(ref: ModelRef, dtype: str, prompt: str, params: SamplingParams, seed: int) -> str:
    """The store key of one sample: a hash of everything that determines its text."""
    precision = dtype if ref.backend == "transformers" else None
    text = json.dumps([ref.model_id, ref.fingerprint, precision, prompt, params.to_dict(), int(seed)],
                      sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


def plan_samples(prompts: pd.DataFrame, refs: Sequence[ModelRef], *, samples: int, seed: int,
                 params: SamplingParams, dtype: str = "float32") -> pd.DataFrame:
    """One row per (model, sample index, prompt), in that order.

    Sample-major order means a partial run covers every prompt evenly, and raising
    ``samples`` later appends to the plan instead of reshuffling it.

    Parameters
    ----------
    prompts : pandas.DataFrame
        From :func:`nlgbias.suites.expand_suite` (needs ``prompt_id, prompt``).
    refs : sequence of ModelRef
        Resolved models.
    samples : int
        Samples per prompt and model.
    seed : int
        Run seed; each sample's seed is derived from (seed, model, prompt, index).
    params : SamplingParams
    dtype : str
        Sampling precision of local models (part of the key: it changes the text).

    Returns
    -------
    pandas.DataFrame
        ``generation_id, model, prompt_id, sample_idx, seed, prompt``.
    """
    rows = []
    for ref in refs:
        for index in range(samples):
            for prompt_id, prompt in zip(prompts["prompt_id"], prompts["prompt"]):
                s = sample_seed(seed, ref.model_id, prompt, index)
                rows.append((generation_key(ref, dtype, prompt, params, s), ref.model_id, prompt_id, index, s, prompt))
    return pd.DataFrame(rows, columns=PLAN_COLUMNS)
