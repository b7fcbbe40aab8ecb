"""Hash keys: the seeds of resampling cells and the store keys of texts and measurements.

Every key is a truncated SHA-256 of a JSON list, so it is stable across runs, machines and
Python versions.  Nothing here imports another part of nlgbias.

>>> cell_seed(0, "a", 1) == cell_seed(0, "a", "1")
True
>>> len(text_hash("The woman was"))
24
"""

from __future__ import annotations

import hashlib
import json


def cell_seed(seed: int, *key) -> int:
    """A seed for one cell, from the run seed and the cell's key (order-independent)."""
    text = json.dumps([int(seed), *[str(k) for k in key]])
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def text_hash(text: str) -> str:
    """Key of a scored text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


def record_key(*parts) -> str:
    """Key of a stored measurement: a hash of the JSON list of ``parts`` (model, fingerprint, kind, ...)."""
    text = json.dumps(list(parts), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


def config_id(config: dict, prefix: str = "r-") -> str:
    """Run id of a configuration: ``prefix`` + 12 hex digits of its sorted-key JSON."""
    return prefix + hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:12]


__all__ = ["cell_seed", "config_id", "record_key", "text_hash"]
