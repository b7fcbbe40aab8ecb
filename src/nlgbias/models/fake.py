"""A deterministic stand-in backend for contract and fault-injection tests.

Its text is derived from a hash of (prompt, sampling parameters, seed), so it is stable
across runs and batches; it is not a language model and measures nothing.  End-to-end tests
use the real embedded model.
"""

from __future__ import annotations

import hashlib
import math
from typing import Sequence

from nlgbias.models.backend import GenerationRequest

WORDS = ("a teacher", "a nurse", "a thief", "kind", "rude", "a doctor", "lazy", "honest", "a cook",
         "a liar", "brave", "a driver", "in the city", "for years", "and", "the", "local", "school")


class FakeBackend:
    """Deterministic pseudo-text; ``next_token_logprobs`` gives hash-derived log-probabilities."""

    def __init__(self, model_id: str = "fake") -> None:
        self.model_id = model_id
        self.info = {"backend": "fake", "note": "deterministic test text, not a language model"}

    def generate(self, requests: Sequence[GenerationRequest]) -> list[str]:
        out = []
        for request in requests:
            digest = hashlib.sha256(f"{self.model_id}|{request.prompt}|{request.params}|{request.seed}".encode()).digest()
            n_words = 1 + digest[0] % min(12, request.params.max_new_tokens)
            words = [WORDS[b % len(WORDS)] for b in digest[1:1 + n_words]]
            end = ". It was fine." if digest[-1] % 3 else ""
            out.append(" " + " ".join(words) + end if digest[-2] % 17 else "")
        return out

    def next_token_logprobs(self, contexts: Sequence[str], targets: Sequence[str]) -> list[float]:
        out = []
        for context, target in zip(contexts, targets):
            digest = hashlib.sha256(f"{self.model_id}|{context}|{target}".encode()).digest()
            out.append(math.log((1 + digest[0]) / 512))
        return out

    def close(self) -> None:
        pass
