"""The manifest settings that decide whether two runs can be analysed as one.

Two finished runs whose manifests agree on every :data:`SETTINGS` entry (suite name, version and
content; the :data:`DECODING` settings; scorer names and versions; bootstrap replicates,
``confidence``, ``min_n`` and the unit of inference) are one *part* of a report over several runs
(:mod:`nlgbias.pipeline.combine`); the report's settings table shows these columns, one per run.
"""

from __future__ import annotations

DECODING = ("temperature", "top_k", "top_p", "max_new_tokens", "samples_per_prompt", "seed", "dtype", "truncate")
SETTINGS = ("suite", *DECODING, "scorers", "n_boot", "confidence", "min_n", "unit")

__all__ = ["DECODING", "SETTINGS"]
