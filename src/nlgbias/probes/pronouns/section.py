"""The pronoun probe's report section: P(he) and P(she) histograms and the measures' tables.

In: the run's :class:`~nlgbias.metrics.results.Results` (the ``pronoun_*`` tables of
:mod:`.analysis`), its samples table (one row per model and prompt) and manifest.  Out: the
context of the template ``_pronouns.html.j2`` next to this module.
"""

from __future__ import annotations

import math

import pandas as pd

from nlgbias.resources import package_path

from nlgbias.metrics.results import Results
from nlgbias.report.sections import records
from nlgbias.report.svg import histogram

TEMPLATE = package_path("probes", "pronouns", "_pronouns.html.j2")


def pronouns(results: Results, probs: pd.DataFrame, _manifest: dict) -> dict | None:
    """Vig et al. templates vs natural sentences: P(he), P(she), divergences, perturbations.

    ``probs`` is the run's samples table (one row per model and prompt)."""
    if results.table("pronoun_divergence").empty or not {"he", "she", "perturbation"} <= set(probs.columns):
        return None
    hists = []
    for model, part in probs[probs["perturbation"] == "orig"].groupby("model", sort=False):
        for prompt_set, cell in part.groupby("prompt_set", sort=False):
            hists.append(histogram({"P(he)": cell["he"].tolist(), "P(she)": cell["she"].tolist()},
                                   title=f"{model} · {prompt_set}: P(he) and P(she) over {len(cell)} prompts",
                                   x_label="probability of the next word", high=max(0.05, _nice(cell[["he", "she"]].max().max()))))
    return {"hists": hists, "divergence": records(results.table("pronoun_divergence")),
            "perturbation": records(results.table("pronoun_perturbation")),
            "certainty": records(results.table("pronoun_certainty")),
            "templates": records(results.table("pronoun_templates")),
            "default": records(results.table("pronoun_default")),
            "saliency": records(results.table("pronoun_saliency")),
            "validity": records(results.table("pronoun_validity")),
            "meta": results.meta.get("pronouns", {})}


def _nice(value: float) -> float:
    if not value or not math.isfinite(value):
        return 1.0
    for limit in (0.05, 0.1, 0.2, 0.25, 0.5, 1.0):
        if value <= limit:
            return limit
    return 1.0
