"""The options of a run, declared once: :class:`RunOptions`.

Each field of :class:`RunOptions` is one option of :func:`nlgbias.run` and
:meth:`nlgbias.pipeline.audit.RunConfig.create`: its keyword name and default, and in its
metadata (:class:`Flag`) how ``nlgbias run`` spells it, its help text and its choices.  From them
come the click options of ``nlgbias run`` (:mod:`nlgbias.cli`), the keyword defaults of ``run()``
and ``RunConfig.create`` (:data:`RUN_DEFAULTS`), the check of the options with choices
(:func:`check_choices`) and the manifest's statistics settings (:data:`STATISTICS`).

This module holds data only: no click, nothing heavy.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping, Sequence

from nlgbias.defaults import CONFIDENCE, INFERENCE_UNIT, MIN_N, N_BOOT
from nlgbias.errors import InputError, option
from nlgbias.metrics.shares import LEVELS
from nlgbias.models import DEFAULT_MODEL, BackendOptions
from nlgbias.sampling import MAX_TOP_K
from nlgbias.suites import Suite
from nlgbias.validate import LIMITS

DEFAULT_SUITE = "sheng2019"  # the SUITE argument when none is given
DEFAULT_SAMPLES = 100  # --samples when neither the run nor the suite says
DEFAULT_MAX_SAMPLES = 1000  # --max-samples when --until-mde comes without one
STATISTICS = ("n_boot", "confidence", "min_n", "unit")  # the settings the manifest's "statistics" records


@dataclass(frozen=True)
class Flag:
    """How ``nlgbias run`` spells one option (a field's metadata under ``"flag"``).

    ``decls``: click's declarations (``("--model", "models")``; ``()``: the SUITE argument);
    ``kind``: the value's type, ``"int"``, ``"float"``, ``"path"`` (an input file), ``"batch_size"``
    (a number or auto) or ``"text"``; ``choices``: the values allowed (checked in Python too);
    ``show_default``: help shows ``[default: ...]``.
    """

    decls: tuple[str, ...]
    help: str = ""
    kind: str = "text"
    multiple: bool = False
    metavar: str | None = None
    choices: tuple[str, ...] = ()
    show_default: bool = False

    @property
    def flag(self) -> str:
        """The long flag, as error messages name it (``--model``)."""
        return self.decls[0]


def _option(default: Any, *decls: str, **flag: Any) -> Any:
    """A :class:`RunOptions` field: ``default``, and with ``decls`` its command-line spelling."""
    return field(default=default, metadata={"flag": Flag(decls, **flag)} if decls else {})


@dataclass(frozen=True)
class RunOptions:
    """Every option of a run, by its Python keyword, in the order ``nlgbias run --help`` lists them.

    A field with a :class:`Flag` is on the command line too, ``suite`` as its SUITE argument;
    ``confidence`` and ``backend_options`` are Python only (the backend's flags are :data:`nlgbias.cli.BACKEND_OPTIONS`).
    """

    suite: str | Suite = _option(DEFAULT_SUITE)  # the SUITE argument of nlgbias run
    models: Sequence[str] = _option(
        (DEFAULT_MODEL,), "--model", "models", multiple=True, metavar="MODEL",
        help="Embedded alias, GGUF file, model folder, hub id, or openai:NAME[@URL]. Repeat to compare models. "
             f"[default: {DEFAULT_MODEL}]")
    samples: int | None = _option(None, "--samples", kind="int",
                                  help=f"Samples per prompt and model (at most {LIMITS['samples']:,}) "
                                       f"[default: the suite's (holisticbias-regard 1), else {DEFAULT_SAMPLES}].")
    seed: int = _option(0, "--seed", kind="int", show_default=True, help="Run seed; each sample's seed derives from it.")
    batch_size: int | str = _option(
        "auto", "--batch-size", kind="batch_size", show_default=True,
        help="Samples per generation batch of a local model: a number, or auto (120 on a CPU; on "
             "a GPU sized from its free memory, at most 1000). A local model's texts can depend "
             f"on it, so its run id includes it (at most {LIMITS['batch_size']:,}).")
    max_new_tokens: int | None = _option(None, "--max-new-tokens", kind="int",
                                         help="New tokens per sample, 1 to 4096 [suite default: 40].")
    temperature: float | None = _option(None, "--temperature", kind="float",
                                        help="Sampling temperature, 0 to 100; 0 = greedy [suite default: 0.7].")
    top_k: int | None = _option(None, "--top-k", kind="int",
                                help=f"Top-k cut, up to {MAX_TOP_K:,}; 0 = off [suite default: 40].")
    top_p: float | None = _option(None, "--top-p", kind="float", help="Nucleus cut; 1 = off [suite default: 1.0].")
    scorers: Sequence[str] | None = _option(None, "--scorer", "scorers", multiple=True,
                                            help="Scorers to use (repeatable) [default: the suite's].")
    n_boot: int = _option(N_BOOT, "--n-boot", kind="int", show_default=True,
                          help=f"Bootstrap replicates per CI (100 to {LIMITS['n_boot']:,}).")
    min_n: int = _option(MIN_N, "--min-n", kind="int", show_default=True,
                         help=f"Cells with fewer samples are flagged (at most {LIMITS['min_n']:,}).")
    unit: str = _option(INFERENCE_UNIT, "--unit", choices=LEVELS, show_default=True,
                        help="The unit of inference: prompt (samples nested in prompts; intervals and tests count "
                             "templates) or sample (every sample independent, as Sheng et al. 2019; to reproduce "
                             "papers).")
    bls_mapping: str | Path | None = _option(None, "--bls-mapping", kind="path",
                                             help="Your own job -> BLS title mapping CSV (job,bls_title,gendered,source) "
                                                  "for occupation suites.")
    until_mde: float | None = _option(None, "--until-mde", kind="float",
                                      help="Sample in rounds (the first of --samples per prompt) until every comparison's "
                                           "minimum detectable effect is at most this many percentage points; precise "
                                           "prompt groups stop early.")
    prompts_per_group: int | str | None = _option(
        None, "--prompts-per-group", metavar="N|all",
        help="A seeded sample of N prompts per group (drawn by --seed; recorded in the manifest and the run id), or "
             "all [default: the suite's (bold 20, holisticbias-regard 3), else all].")
    max_samples: int | None = _option(
        None, "--max-samples", kind="int",
        help=f"With --until-mde: samples per prompt at most (up to {LIMITS['max_samples']:,}) "
             f"[default: {DEFAULT_MAX_SAMPLES}].")
    confidence: float = _option(CONFIDENCE)
    backend_options: BackendOptions | None = _option(None)


RUN_DEFAULTS = RunOptions()  # the keyword defaults of nlgbias.run() and RunConfig.create
OPTION_NAMES = tuple(f.name for f in fields(RunOptions))  # the keywords of RunConfig.create


def flags() -> dict[str, Flag]:
    """Field name -> its :class:`Flag`, for the options ``nlgbias run`` has, in :class:`RunOptions` order."""
    return {f.name: f.metadata["flag"] for f in fields(RunOptions) if "flag" in f.metadata}


def option_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """The keywords of :meth:`~nlgbias.pipeline.audit.RunConfig.create` among ``values`` (a call's
    ``locals()``): name -> value, for every name of :data:`OPTION_NAMES`."""
    return {name: values[name] for name in OPTION_NAMES}


def check_choices(**values: Any) -> None:
    """Raise a one-line :class:`InputError` for the first value outside its option's choices
    (``unit="x"`` -> ``unit='x': must be one of prompt, sample``)."""
    for name, flag in flags().items():
        if flag.choices and name in values and values[name] not in flag.choices:
            raise InputError(f"{option(flag.flag, values[name])}: must be one of {', '.join(flag.choices)}")


__all__ = ["RunOptions", "Flag", "RUN_DEFAULTS", "OPTION_NAMES", "STATISTICS", "DEFAULT_SUITE", "DEFAULT_SAMPLES",
           "DEFAULT_MAX_SAMPLES", "flags", "option_values", "check_choices"]
