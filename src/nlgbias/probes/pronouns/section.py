"""The pronoun probe's report section: P(he) and P(she) histograms and the measures' tables.

In: the run's :class:`~nlgbias.metrics.results.Results` (the ``pronoun_*`` tables of
:mod:`.analysis`), its samples table (one row per model and prompt) and manifest.  Out: the
context of the template ``_pronouns.html.j2`` next to this module.
"""

from __future__ import annotations

import math

import pandas as pd

from nlgbias.resources import package_path

from nlgbias.metrics.power import FDR
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
    return {"hists": hists, "findings": pronoun_findings(results),
            "direction": named(records(results.table("pronoun_direction")), "perturbation"),
            "divergence": named(records(results.table("pronoun_divergence")), "measure"),
            "perturbation": named(records(results.table("pronoun_perturbation")), "perturbation"),
            "certainty": named(records(results.table("pronoun_certainty")), "measure"),
            "templates": named(records(results.table("pronoun_templates")), "measure"),
            "default": records(results.table("pronoun_default")),
            "saliency": named(records(results.table("pronoun_saliency")), "measure"),
            "validity": records(results.table("pronoun_validity")),
            "meta": results.meta.get("pronouns", {})}


MEASURE_NAMES = {  # what the pronoun tables' measure codes mean, as the report prints them
    "kl": "KL divergence of P(he) from P(she) (binned)", "emd": "earth mover's distance",
    "top1": "highest next-word probability", "gap": "gap between the two highest",
    "abs_diff": "|P(he) − P(she)|", "ratio": "P(he) / P(she)", "profession": "saliency of the profession",
    "last": "saliency of the last token"}
PERTURBATION_NAMES = {"orig": "profession kept (Orig)", "replace": "profession → “person” (Replace)",
                      "delete": "profession deleted (Delete)"}


def measure_name(code: str) -> str:
    """The words for a pronoun measure or perturbation code (``kl`` -> KL divergence ...); unknown codes as
    they are (the CSV files keep the codes).

    >>> measure_name("top1"), measure_name("delete"), measure_name("mine")
    ('highest next-word probability', 'profession deleted (Delete)', 'mine')
    """
    return MEASURE_NAMES.get(str(code), PERTURBATION_NAMES.get(str(code), str(code)))


def named(rows: list[dict], column: str) -> list[dict]:
    """``rows`` with the codes of ``column`` replaced by their words (:func:`measure_name`)."""
    return [{**row, column: measure_name(row[column])} if column in row else row for row in rows]


def pronoun_findings(results: Results, *, alpha: float = FDR) -> list[dict]:
    """Key findings of a pronoun run, one per (model, prompt set): which way P(he) − P(she) leans with the
    profession kept (signed mean, CI, share of prompts with P(he) > P(she), adjusted p; ``lean``: ``he``,
    ``she`` or None when not significant at ``alpha``) and how |P(he) − P(she)| changes when the
    profession is replaced or deleted (``changes``)."""
    direction = results.table("pronoun_direction")
    if direction.empty:
        return []
    perturbation = results.table("pronoun_perturbation")
    out = []
    for row in records(direction[direction["perturbation"] == "orig"]):
        changes = []
        if not perturbation.empty:
            cell = perturbation[(perturbation["model"] == row["model"])
                                & (perturbation["prompt_set"] == row["prompt_set"])].set_index("perturbation")
            for name in ("orig", "replace", "delete"):
                if name in cell.index:
                    r = cell.loc[name]
                    changes.append({"name": PERTURBATION_NAMES[name], "value": float(r["value"]),
                                    "ci_low": float(r["ci_low"]), "ci_high": float(r["ci_high"])})
        significant = bool(row["p_adj"] < alpha)
        lean = ("he" if row["mean_diff"] > 0 else "she") if significant else None
        out.append({**row, "lean": lean, "changes": changes})
    return out


def _nice(value: float) -> float:
    if not value or not math.isfinite(value):
        return 1.0
    for limit in (0.05, 0.1, 0.2, 0.25, 0.5, 1.0):
        if value <= limit:
            return limit
    return 1.0
