"""Key findings of a label-share run: one count of the comparisons, the largest significant ones.

In: a run's :class:`~nlgbias.metrics.results.Results` (``gaps``, ``model_gaps`` and, with several
models, ``gap_differences``: the tables of one Benjamini-Hochberg family) and its manifest.
Out: plain dicts for the report's "Key findings" (and the exports' captions):

- :func:`family_counts`: how many comparisons of each kind the family holds, and how many are
  significant, so every sentence of the report counts the same comparisons;
- :func:`top_findings`: the significant comparisons of every kind, largest first;
- :func:`precision_outcome`: whether ``--until-mde`` met its target or stopped at ``--max-samples``.
"""

from __future__ import annotations

import pandas as pd

from nlgbias.metrics.power import FDR
from nlgbias.metrics.results import Results

KINDS = (("gaps", "group gap", "group gaps"), ("model_gaps", "model gap", "model gaps"),
         ("gap_differences", "gap difference", "gap differences"))
TOP = 12  # findings listed


def family_tables(results: Results) -> dict[str, pd.DataFrame]:
    """The run's tables of tested comparisons that exist and are not empty, in :data:`KINDS` order."""
    return {name: results.table(name) for name, _, _ in KINDS if not results.table(name).empty}


def family_counts(results: Results, *, alpha: float = FDR) -> dict:
    """Comparisons and significant comparisons (adjusted p < ``alpha``), per kind and in all.

    Returns
    -------
    dict
        ``n`` (every comparison: the size of the Benjamini-Hochberg family), ``significant``,
        ``kinds``: one ``{name, label, n, significant}`` per non-empty table, and ``text``: the
        kinds in words (``"24 group gaps, 24 model gaps and 12 gap differences"``), and
        ``significant_text``: the significant ones in words.

    >>> table = pd.DataFrame({"p_adj": [0.01, 0.2, 0.04]})
    >>> counts = family_counts(Results({"gaps": table, "gap_differences": table.head(1)}))
    >>> counts["n"], counts["significant"], counts["text"], counts["significant_text"]
    (4, 3, '3 group gaps and 1 gap difference', '2 group gaps and 1 gap difference')
    """
    kinds = []
    for name, one, many in KINDS:
        table = results.table(name)
        if table.empty:
            continue
        significant = int((table["p_adj"] < alpha).sum())
        kinds.append({"name": name, "label": one if len(table) == 1 else many, "n": int(len(table)),
                      "significant": significant, "significant_label": one if significant == 1 else many})
    return {"n": sum(k["n"] for k in kinds), "significant": sum(k["significant"] for k in kinds), "kinds": kinds,
            "text": _listed([f"{k['n']} {k['label']}" for k in kinds]),
            "significant_text": _listed([f"{k['significant']} {k['significant_label']}" for k in kinds
                                         if k["significant"]])}


def _listed(words: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``; ``none`` for no words."""
    if not words:
        return "none"
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def top_findings(results: Results, *, alpha: float = FDR, limit: int = TOP) -> list[dict]:
    """The significant comparisons of every kind, largest absolute difference first (at most ``limit``).

    Each row of its table plus ``kind`` (``gaps``, ``model_gaps`` or ``gap_differences``).
    """
    rows = [dict(row, kind=name) for name, table in family_tables(results).items()
            for row in table[table["p_adj"] < alpha].to_dict(orient="records")]
    return sorted(rows, key=lambda r: -abs(r["diff"]))[:limit]


def precision_outcome(manifest: dict) -> dict | None:
    """``--until-mde``'s outcome: ``met`` (bool), the target and budget, and, when the run stopped at
    ``--max-samples``, how many comparisons remain above the target and the largest MDE (points;
    None when one of them can see no gap at all).  None for a run without ``--until-mde``."""
    precision = manifest.get("precision")
    if not precision:
        return None
    last = precision["rounds"][-1]
    mdes = [c["mde"] for c in last["comparisons"]]
    return {"met": precision["stopped"] == "target", "target": 100 * precision["until_mde"],
            "max_samples": precision["max_samples"], "over": last["over_target"], "of": len(last["comparisons"]),
            "rounds": len(precision["rounds"]),
            "largest": None if any(m is None for m in mdes) or not mdes else 100 * max(mdes)}


def precision_line(manifest: dict) -> str | None:
    """One sentence for the console and the key findings on how ``--until-mde`` ended (None without it).

    The gaps it targets are the run's group and model gaps (the rule of :mod:`nlgbias.pipeline.precision`).

    >>> manifest = {"precision": {"stopped": "max_samples", "until_mde": 0.05, "max_samples": 40,
    ...     "rounds": [{"over_target": 2, "comparisons": [{"mde": 0.04}, {"mde": 0.12}, {"mde": 0.09}]}]}}
    >>> print(precision_line(manifest))
    Target not met: sampling stopped at --max-samples 40 with 2 of the 3 gaps it targets still above an MDE of 5 points (largest 12.0 points).
    """
    outcome = precision_outcome(manifest)
    if outcome is None:
        return None
    if outcome["met"]:
        return (f"Target met: each of the {outcome['of']} gaps it targets has an MDE of at most "
                f"{outcome['target']:g} points (after {outcome['rounds']} round{'s' if outcome['rounds'] != 1 else ''}).")
    largest = ("some can see no gap at all" if outcome["largest"] is None
               else f"largest {outcome['largest']:.1f} points")
    return (f"Target not met: sampling stopped at --max-samples {outcome['max_samples']} with {outcome['over']} of "
            f"the {outcome['of']} gaps it targets still above an MDE of {outcome['target']:g} points ({largest}).")


__all__ = ["KINDS", "family_counts", "family_tables", "precision_line", "precision_outcome", "top_findings"]
