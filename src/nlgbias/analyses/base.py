"""The analysis registry: what an analysis is, which ones a run performs, and running them.

An :class:`Analysis` declares everything about a probe's statistics in one place: its name, the
scorers it reads, the suite kind it applies to, its compute function (run tables -> named metric
tables) and its report section (a context function plus a template).  The run's check of a
suite's ``analyses:`` list, its scorer checks and the report's sections are derived from
:data:`REGISTRY` (a :class:`nlgbias.registry.Registry`: built-in entries, then the
``nlgbias.analyses`` entry points of installed packages, then :func:`register` calls).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

import pandas as pd

from nlgbias.defaults import CONFIDENCE, INFERENCE_UNIT, MIN_N, N_BOOT
from nlgbias.errors import SuiteError, command_line
from nlgbias.metrics.results import Results, adjust_family
from nlgbias.registry import Registry, did_you_mean
from nlgbias.report.html import Section

if TYPE_CHECKING:
    from nlgbias.suites import Suite


@dataclass(frozen=True)
class AnalysisOptions:
    """Statistics settings shared by every analysis of a run."""

    seed: int = 0
    n_boot: int = N_BOOT
    confidence: float = CONFIDENCE
    min_n: int = MIN_N
    bls_mapping: str | None = None  # a user's job -> BLS title mapping (default: the shipped one)
    unit: str = INFERENCE_UNIT  # the unit of inference: prompt (samples nested in prompts) or sample (all independent)


@dataclass(frozen=True)
class RunTables:
    """What an analysis reads.

    ``samples``: the run's samples table (generation suites: one row per generation with
    ``<scorer>_label/_details``; pronoun suites: one row per model and prompt with the
    probabilities).  ``scored``: one row per (generation, scorer) with ``generation_id, model,
    context, group, is_empty, scorer, label`` (empty for pronoun suites).  ``probes``: a stage's
    other tables by name (pronoun suites: ``saliency``, ``default``).
    """

    samples: pd.DataFrame
    scored: pd.DataFrame
    suite: Suite
    probes: Mapping[str, pd.DataFrame] = field(default_factory=dict)


@dataclass(frozen=True)
class Analysis:
    """One registry entry.

    name : the suite's ``analyses:`` value and the report section's context name.
    compute : ``compute(tables: RunTables, options: AnalysisOptions) -> Results``.
    requires : scorers the analysis reads (a run without one of them stops before generating).
    kind : the suite kind it applies to, ``generation`` or ``pronoun``.
    section : ``section(results, samples, manifest) -> dict | None``, the template's context.
    template : the section's Jinja template: a file name under ``nlgbias/report/templates`` or a path.
    auto : run whenever the run has every scorer in ``requires``, whether or not the suite lists it
        (for checks that belong to a scorer rather than to a probe, such as regard's validity).
    family : its tables whose ``p`` joins the run's Benjamini-Hochberg family of bias comparisons
        (:func:`~nlgbias.metrics.results.adjust_family` sets ``p_adj`` and ``mde`` over all of them).
    extends : an ``auto`` analysis that builds on another runs only where the run performs that one.
    min_models : an ``auto`` analysis runs only for runs with at least this many models.
    gap_scorers : measures whose label gaps it adds to the family as a scorer's would (every suite
        comparison and model pair, two labels each: bold's three gender-polarity measures), so
        that ``nlgbias plan`` counts the family the run will test.
    """

    name: str
    compute: Callable[[RunTables, AnalysisOptions], Results]
    requires: tuple[str, ...] = ()
    kind: str = "generation"
    section: Callable[[Results, pd.DataFrame, dict], dict | None] | None = None
    template: str | Path | None = None
    auto: bool = False
    family: tuple[str, ...] = ()
    extends: str | None = None
    min_models: int = 1
    gap_scorers: tuple[str, ...] = ()


REGISTRY: Registry = Registry("analysis", "nlgbias.analyses", {
    "shares": "nlgbias.analyses.builtin:SHARES",
    "gap_differences": "nlgbias.analyses.builtin:GAP_DIFFERENCES",
    "occupations": "nlgbias.analyses.builtin:OCCUPATIONS",
    "gender_direction": "nlgbias.analyses.builtin:GENDER_DIRECTION",
    "regard_validity": "nlgbias.analyses.builtin:REGARD_VALIDITY",
    "bold": "nlgbias.analyses.bold:BOLD",
    "pronouns": "nlgbias.probes.pronouns.analysis:PRONOUNS",
    "holisticbias_regard": "nlgbias.probes.holistic_bias.regard:HOLISTICBIAS_REGARD",
    "holisticbias_likelihood": "nlgbias.probes.holistic_bias.likelihood_stats:HOLISTICBIAS_LIKELIHOOD",
}, error=SuiteError)


def register(analysis: Analysis) -> Analysis:
    """Add (or replace) an analysis; it becomes valid in suites and gets its report section."""
    REGISTRY.register(analysis.name, analysis)
    return analysis


def analysis_names(kind: str = "generation") -> tuple[str, ...]:
    """The registered analyses a suite of ``kind`` may ask for, in registry order."""
    return tuple(name for name in REGISTRY.names() if REGISTRY[name].kind == kind)


def check_analyses(suite: Suite) -> None:
    """Check that every analysis ``suite`` lists is registered for its kind (where the run is configured).

    Raises
    ------
    SuiteError
        ``<file:line>: analyses[i]: unknown analysis 'x'; did you mean ...? available: ...``.
    """
    known = analysis_names(suite.kind)
    for index, name in enumerate(suite.analyses):
        if name in known:
            continue
        where = (suite.analyses_at[index] if index < len(suite.analyses_at) else
                 f"{suite.path or suite.name}: analyses[{index}]")
        how = ("load the module that registers it with --plugin MODULE" if command_line() else
               "import the module that registers it first")
        raise SuiteError(f"{where}: unknown analysis {name!r}; {did_you_mean(name, known)}"
                         f"available: {', '.join(sorted(known))} ({how})")


def analyses_for(suite: Suite, scorers: Sequence[str], models: int = 1) -> tuple[str, ...]:
    """The analyses a run performs: the suite's, then every ``auto`` analysis whose scorers it has
    (and, where it says so, the analysis it extends and its minimum number of ``models``)."""
    extra = [name for name in REGISTRY.names() for a in [REGISTRY[name]]
             if a.auto and a.kind == suite.kind and name not in suite.analyses and set(a.requires) <= set(scorers)
             and (a.extends is None or a.extends in suite.analyses) and models >= a.min_models]
    return (*suite.analyses, *extra)


def run_analyses(names, tables: RunTables, options: AnalysisOptions) -> Results:
    """Run each named analysis and merge their tables into one :class:`Results`.

    Parameters
    ----------
    names : sequence of str
        From the suite's ``analyses`` key.
    tables : RunTables
    options : AnalysisOptions
    """
    # Probability (pronoun) runs have never listed their one analysis in metrics.json; kept so
    # that their outputs stay byte-identical (tests/test_golden.py).
    results = Results({}, {"analyses": list(names)} if tables.suite.kind == "generation" else {})
    for name in names:
        results = results.merged(REGISTRY[name].compute(tables, options))
    family = [table for name in names for table in REGISTRY[name].family]
    return adjust_family(results, family) if family else results


def report_sections(performed: Sequence[str] = ()) -> list[Section]:
    """The report section of every registered analysis that has one, in registry order.

    ``performed``: the analyses a run performed (its manifest's ``statistics.analyses``); each must
    be registered, so that re-rendering a run never leaves a section out silently.

    Raises
    ------
    SuiteError
        ``analysis 'x' of this run is not registered; ...`` (its module was not loaded).
    """
    for name in performed:
        if name not in REGISTRY:
            how = ("load the module that registers it with --plugin MODULE" if command_line() else
                   "import the module that registers it first")
            raise SuiteError(f"analysis {name!r} of this run is not registered, so its report section cannot be "
                             f"shown; {how}")
    return [Section(a.name, a.section, a.template) for a in (REGISTRY[name] for name in REGISTRY.names())
            if a.section is not None and a.template is not None]


__all__ = ["Analysis", "AnalysisOptions", "REGISTRY", "RunTables", "analyses_for", "analysis_names",
           "check_analyses", "register", "report_sections", "run_analyses"]
