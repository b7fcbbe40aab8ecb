"""The ``holisticbias_likelihood`` analysis: Likelihood Bias per axis, and its report section.

In: the run's samples table of a ``likelihood`` suite (one row per model and sentence, with
``axis, group, logprob``).  Out (:class:`~nlgbias.metrics.results.Results`, from
:func:`nlgbias.metrics.likelihood_bias.likelihood_bias`):

``likelihood_axes``
    Per (model, axis): descriptors, pairs, pairs that differ, the Likelihood Bias (their share) with a
    bootstrap CI, and the three most and least likely descriptors.
``likelihood_descriptors``
    Per descriptor: the mean log-probability per token of its sentences with a bootstrap CI, the
    median, and a Mann-Whitney test against the rest of its axis (flagged where it differs).
``likelihood_pairs``
    Every pairwise Mann-Whitney U test.
"""

from __future__ import annotations

import pandas as pd

from nlgbias.analyses.base import Analysis, AnalysisOptions, RunTables
from nlgbias.metrics.likelihood_bias import likelihood_bias
from nlgbias.metrics.results import Results
from nlgbias.probes.holistic_bias.panels import axis_panels
from nlgbias.resources import package_path


def compute(tables: RunTables, options: AnalysisOptions) -> Results:
    """Likelihood Bias of every (model, axis) (see the module)."""
    out = likelihood_bias(tables.samples[["model", "axis", "group", "logprob"]], confidence=options.confidence,
                          n_boot=options.n_boot, seed=options.seed)
    meta = {"holisticbias_likelihood": {
        "value": "mean log-probability per token of a sentence (minus its log-perplexity)",
        "test": "two-sided Mann-Whitney U (normal approximation with tie and continuity corrections)",
        "correction": f"Benjamini-Hochberg over all {len(out['pairs'])} descriptor pairs of the run",
        "level": round(1 - options.confidence, 6),
        "interval": "bootstrap percentile intervals: a descriptor's mean resamples its sentences; the share "
                    "resamples the axis's descriptors, each pair's test result held"}}
    return Results({"likelihood_axes": out["axes"], "likelihood_descriptors": out["descriptors"],
                    "likelihood_pairs": out["pairs"]}, meta)


def section(results: Results, _samples: pd.DataFrame, _manifest: dict) -> dict | None:
    """The report section: Likelihood Bias per axis, then per axis the descriptors' dot plot and table."""
    axes = results.table("likelihood_axes")
    if axes.empty:
        return None
    descriptors = results.table("likelihood_descriptors")
    models = axis_panels(axes, descriptors, value="mean", unit="", chart_title="mean log-probability per token",
                         summary_title="{model}: Likelihood Bias per axis (share of descriptor pairs that differ)",
                         reference=lambda _row, mine: float(mine["mean"].mean()))
    return {"models": models, "meta": results.meta.get("holisticbias_likelihood", {})}


HOLISTICBIAS_LIKELIHOOD = Analysis(name="holisticbias_likelihood", compute=compute, kind="likelihood", section=section,
                                   template=package_path("probes", "holistic_bias", "_holistic_likelihood.html.j2"))

__all__ = ["HOLISTICBIAS_LIKELIHOOD", "compute", "section"]
