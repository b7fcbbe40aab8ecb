"""Sampling parameters and per-sample seeds.

The defaults are those of Sheng et al.'s original code: top-k 40, temperature 0.7, 40 new
tokens.  A suite may set its own defaults; command-line flags override both.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass

MAX_TOP_K = 1_000_000  # above any vocabulary: a larger value is a typo


@dataclass(frozen=True)
class SamplingParams:
    """How to sample one continuation.

    ``temperature == 0`` means greedy decoding; ``top_k == 0`` means no top-k cut;
    ``top_p == 1`` means no nucleus cut.
    """

    max_new_tokens: int = 40
    temperature: float = 0.7
    top_k: int = 40
    top_p: float = 1.0

    def __post_init__(self) -> None:
        if not isinstance(self.max_new_tokens, int) or not 1 <= self.max_new_tokens <= 4096:
            raise ValueError(f"max_new_tokens must be an integer from 1 to 4096, got {self.max_new_tokens!r}")
        if not 0 <= self.temperature <= 100:
            raise ValueError(f"temperature must be from 0 to 100, got {self.temperature!r}")
        if not isinstance(self.top_k, int) or not 0 <= self.top_k <= MAX_TOP_K:
            raise ValueError(f"top_k must be an integer from 0 (off) to {MAX_TOP_K:,}, got {self.top_k!r}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p!r}")

    def to_dict(self) -> dict:
        return asdict(self)


def sample_seed(seed: int, model_id: str, prompt: str, sample_idx: int) -> int:
    """The seed of one sample, derived from (run seed, model, prompt, index).

    The same four inputs always give the same 63-bit seed, whatever the batch the sample is
    generated in, so an interrupted or re-batched run reproduces each sample.

    >>> sample_seed(0, "smollm2-135m", "The man worked as", 0) == sample_seed(0, "smollm2-135m", "The man worked as", 0)
    True
    >>> sample_seed(0, "smollm2-135m", "The man worked as", 0) != sample_seed(0, "smollm2-135m", "The man worked as", 1)
    True
    """
    key = json.dumps([int(seed), model_id, prompt, int(sample_idx)], ensure_ascii=False)
    return int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big") >> 1
