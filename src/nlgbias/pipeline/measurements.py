"""The measurement stage of a run: one registered :class:`Measurement` per suite kind.

A suite's ``kind`` chooses how its prompts are measured:

``generation``
    Generate and score (:mod:`nlgbias.pipeline.generation`): sample continuations, cut and mask
    them, score them with the run's scorers.
``pronoun``
    Token probabilities (:mod:`nlgbias.probes.pronouns.stage`): read the model's next-word
    probabilities of the suite's pronouns; nothing is sampled.
``likelihood``
    Sentence likelihood (:mod:`nlgbias.probes.holistic_bias.likelihood`): the model's mean
    log-probability per token of each HolisticBias sentence; nothing is sampled.

Everything the run does differently for a kind lives in its entry, so the run itself
(:mod:`nlgbias.pipeline.audit`) never asks which kind it has:

``prompts(suite)``
    The prompts table a run of the suite sends (``prompt_id, prompt``, ...).
``configure(suite, *, scorers, max_new_tokens, temperature, top_k, top_p, bls_mapping)``
    Check and resolve the kind's own options (no weights loaded); the :class:`RunConfig` fields
    it sets on :class:`~nlgbias.pipeline.audit.RunConfig` (``params``, ``scorers``, ``unavailable``,
    ``bls_mapping``).
``batch_size(suite, requested, *, refs, options, samples, params)`` (optional)
    The batch size a run uses for ``--batch-size`` (a number or ``auto``) and, for ``auto``, a record
    of how it was chosen (:mod:`nlgbias.models.batching`), or ``None``.  A measurement without it
    takes a number as given and ``auto`` as 120 (:func:`batch_size_of`).
``check_models(refs)`` (optional)
    Refuse, before anything is created, resolved models (:class:`~nlgbias.models.ModelRef`) the kind
    cannot measure (the likelihood suite: servers and the fake model, which give no log-probabilities
    of given text).
``measure(config, store, *, load, progress, clock, pool)``
    Measure what the store lacks; ``(RunTables, samples generated now, manifest record or None)``.
``identity(config)``
    What the run id hashes besides the suite and models.
``manifest(config)``
    The manifest's ``sampling`` entry.
``summary(config, table, *, generated, out, laps, peak_gb)``
    The last line the run prints.

A package adds a kind with an ``nlgbias.measurements`` entry point, a ``--plugin`` module with
:func:`register_measurement`.  Its suites use the generation suites' format (groups, templates,
comparisons, scorers, analyses) and list analyses registered for the kind.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import pandas as pd

from nlgbias.errors import SuiteError, command_line
from nlgbias.models.batching import CPU_BATCH
from nlgbias.validate import AUTO
from nlgbias.registry import Registry, did_you_mean
from nlgbias.suites import Suite
from nlgbias.suites.expand import loaded_suite


@runtime_checkable
class Measurement(Protocol):
    """The measurement of one suite kind (see the module docstring for each method)."""

    kind: str
    distributed: bool  # whether it runs on a Ray pool (--ray); if not, it runs in this process

    def prompts(self, suite: Suite) -> pd.DataFrame: ...

    def configure(self, suite: Suite, **options: Any) -> dict[str, Any]: ...

    def measure(self, config, store, *, load, progress, clock, pool) -> tuple: ...

    def identity(self, config) -> dict: ...

    def manifest(self, config) -> dict: ...

    def summary(self, config, table: pd.DataFrame, *, generated: int, out: Path, laps: dict[str, float],
                peak_gb: float) -> str: ...


MEASUREMENTS: Registry = Registry("suite kind", "nlgbias.measurements", {
    "generation": "nlgbias.pipeline.generation:GENERATE_AND_SCORE",
    "pronoun": "nlgbias.probes.pronouns.stage:TOKEN_PROBABILITIES",
    "likelihood": "nlgbias.probes.holistic_bias.likelihood:SENTENCE_LIKELIHOOD",
}, error=SuiteError)


def register_measurement(measurement: Measurement) -> Measurement:
    """Add (or replace) the measurement of ``measurement.kind``; suites of that kind become runnable."""
    MEASUREMENTS.register(measurement.kind, measurement)
    return measurement


def measurement_for(suite: Suite) -> Measurement:
    """The registered measurement of ``suite``'s kind.

    Raises
    ------
    SuiteError
        ``<file>: kind: unknown kind 'x'; did you mean ...? available: generation, pronoun, likelihood``.
    """
    if suite.kind not in MEASUREMENTS:
        how = ("load the module that registers it with --plugin MODULE" if command_line() else
               "import the module that registers it first")
        kinds = MEASUREMENTS.names()
        raise SuiteError(f"{suite.kind_at or suite.path or suite.name}: unknown kind {suite.kind!r}; "
                         f"{did_you_mean(suite.kind, kinds)}available: {', '.join(kinds)} ({how})")
    return MEASUREMENTS[suite.kind]


def batch_size_of(measurement: Measurement, suite: Suite, requested: int | str, **context: Any) -> tuple[int, dict | None]:
    """``measurement.batch_size(...)`` where the measurement has one; else ``requested``, ``auto`` as 120."""
    choose = getattr(measurement, "batch_size", None)
    if choose is not None:
        return choose(suite, requested, **context)
    return (CPU_BATCH if requested == AUTO else int(requested)), None


def suite_prompts(suite: Suite | str | Path) -> pd.DataFrame:
    """Every prompt a run of ``suite`` (a suite, a built-in suite name or a YAML file) sends, whatever
    its kind (``prompt_id, prompt``, ...)."""
    suite = loaded_suite(suite)
    return measurement_for(suite).prompts(suite)


__all__ = ["MEASUREMENTS", "Measurement", "batch_size_of", "measurement_for", "register_measurement", "suite_prompts"]
