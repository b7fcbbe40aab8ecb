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

# (table, one, many, shape): the tables of the run's Benjamini-Hochberg family; ``shape`` is the
# table whose columns it has (how the key findings word it)
KINDS = (("gaps", "group gap", "group gaps", "gaps"), ("model_gaps", "model gap", "model gaps", "model_gaps"),
         ("gap_differences", "gap difference", "gap differences", "gap_differences"),
         ("polarity_gaps", "gender-polarity gap", "gender-polarity gaps", "gaps"),
         ("polarity_model_gaps", "gender-polarity model gap", "gender-polarity model gaps", "model_gaps"))
FEW_PROMPTS = 10  # comparisons with fewer prompts (templates) on a side get a warning
TOP = 12  # findings listed


def family_tables(results: Results) -> dict[str, pd.DataFrame]:
    """The run's tables of tested comparisons that exist and are not empty, in :data:`KINDS` order."""
    return {name: results.table(name) for name, *_ in KINDS if not results.table(name).empty}


def family_counts(results: Results, *, alpha: float = FDR) -> dict:
    """Comparisons and significant comparisons (adjusted p < ``alpha``), per kind and in all.

    A comparison without a p-value (one prompt on a side, at prompt level) is not tested and not
    in the family; ``untested`` counts them.

    Returns
    -------
    dict
        ``n`` (every tested comparison: the size of the Benjamini-Hochberg family, the
        ``n_comparisons`` of ``metrics.json``), ``untested``, ``significant``,
        ``kinds``: one ``{name, label, n, significant}`` per non-empty table, and ``text``: the
        kinds in words (``"24 group gaps, 24 model gaps and 12 gap differences"``), and
        ``significant_text``: the significant ones in words.

    >>> table = pd.DataFrame({"p_adj": [0.01, 0.2, 0.04]})
    >>> counts = family_counts(Results({"gaps": table, "gap_differences": table.head(1)}))
    >>> counts["n"], counts["significant"], counts["text"], counts["significant_text"]
    (4, 3, '3 group gaps and 1 gap difference', '2 group gaps and 1 gap difference')
    """
    kinds = []
    untested = 0
    for name, one, many, _ in KINDS:
        table = results.table(name)
        if table.empty:
            continue
        tested = int(table["p"].notna().sum()) if "p" in table else int(len(table))
        untested += int(len(table)) - tested
        if not tested:
            continue
        significant = int((table["p_adj"] < alpha).sum())
        kinds.append({"name": name, "label": one if tested == 1 else many, "n": tested,
                      "significant": significant, "significant_label": one if significant == 1 else many})
    return {"n": sum(k["n"] for k in kinds), "untested": untested,
            "significant": sum(k["significant"] for k in kinds), "kinds": kinds,
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

    Each row of its table plus ``kind``, the shape of its table (``gaps``, ``model_gaps`` or
    ``gap_differences``; a gender-polarity gap is worded as a group gap).
    """
    shape = {name: kind for name, _, _, kind in KINDS}
    rows = [dict(row, kind=shape[name]) for name, table in family_tables(results).items()
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


def few_prompts(results: Results, *, least: int = FEW_PROMPTS) -> dict | None:
    """The tested comparisons of the family with fewer than ``least`` prompts (templates) in a cell
    (``units_a``, ``units_b``; a gap difference's ``units``, the fewest of its four cells): ``n``
    of ``of`` (the family's size, as :func:`family_counts`), and the fewest; None when every
    comparison has enough, or the run has no prompt counts (written before them).

    >>> table = pd.DataFrame({"units_a": [5.0, 20.0], "units_b": [5.0, 20.0], "p": [0.1, 0.2]})
    >>> few_prompts(Results({"gaps": table}))
    {'n': 1, 'of': 2, 'fewest': 5, 'least': 10}
    """
    tables = [t[t["p"].notna()] for t in family_tables(results).values() if "units_a" in t or "units" in t]
    if not tables:
        return None
    fewest = pd.concat([t["units"] if "units" in t else t[["units_a", "units_b"]].min(axis=1) for t in tables],
                       ignore_index=True)
    weak = fewest[fewest < least]
    if weak.empty:
        return None
    return {"n": int(len(weak)), "of": int(len(fewest)), "fewest": int(weak.min()), "least": least}


__all__ = ["FEW_PROMPTS", "KINDS", "family_counts", "few_prompts", "family_tables", "precision_line", "precision_outcome", "top_findings"]
