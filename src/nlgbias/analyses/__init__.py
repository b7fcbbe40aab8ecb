"""The analyses a suite can ask for (its ``analyses:`` key): one registry entry each.

:mod:`.base` holds the registry (:data:`REGISTRY`, :func:`register`) and runs a suite's analyses;
:mod:`.builtin` holds the built-in analyses of generation suites (``shares``, ``gap_differences``,
``occupations``, ``gender_direction``, ``regard_validity``); the pronoun probe registers its own
(:mod:`nlgbias.probes.pronouns.analysis`).  Adding a probe is one :func:`register` call (or an
``nlgbias.analyses`` entry point), a metrics module and a template (see ``docs/extending.md``).
"""

from nlgbias.analyses.base import (
                                   REGISTRY,
                                   Analysis,
                                   AnalysisOptions,
                                   RunTables,
                                   analyses_for,
                                   analysis_names,
                                   check_analyses,
                                   register,
                                   report_sections,
                                   run_analyses,
)
from nlgbias.submodules import lazy_submodules

__all__ = ["Analysis", "AnalysisOptions", "REGISTRY", "RunTables", "analyses_for", "analysis_names",
           "check_analyses", "register", "report_sections", "run_analyses"]

__getattr__ = lazy_submodules(__name__)  # nlgbias.<package>.<module> after a plain import nlgbias
