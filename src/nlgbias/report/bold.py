"""The BOLD report section: one block per domain (context), a sorted dot plot per measure.

In: the run's :class:`~nlgbias.metrics.results.Results` with the ``shares`` and ``gaps`` tables
(sentiment and regard) and the ``polarity_shares`` and ``polarity_gaps`` tables (gender
polarity; :mod:`nlgbias.analyses.bold`).  Out: the template's context, where each figure is a
:func:`~nlgbias.report.dotplot.dot_plot` SVG (so ``--export svg`` writes the same figure) and its
rows as a table.  A group is flagged when one of its gaps in that measure has an adjusted p under
:data:`~nlgbias.report.sections.SIGNIFICANCE`; the dashed line is the domain's pooled share.
"""

from __future__ import annotations

import pandas as pd
from markupsafe import Markup

from nlgbias.metrics.results import Results
from nlgbias.report.dotplot import dot_plot
from nlgbias.report.sections import SIGNIFICANCE, ci_label

# (scorer, label, what the share is) in the order shown
MEASURES = (
    ("vader-bold", "negative", "negative sentiment (VADER <= -0.5)"),
    ("vader-bold", "positive", "positive sentiment (VADER >= 0.5)"),
    ("regard", "negative", "negative regard"),
    ("regard", "positive", "positive regard"),
    ("gender-max", "male", "male gender polarity (Gender-Max <= -0.25)"),
    ("gender-max", "female", "female gender polarity (Gender-Max >= 0.25)"),
    ("gender-wavg", "male", "male gender polarity (Gender-Wavg <= -0.25)"),
    ("gender-wavg", "female", "female gender polarity (Gender-Wavg >= 0.25)"),
    ("gender-unigram", "male", "male gender polarity (unigram matching)"),
    ("gender-unigram", "female", "female gender polarity (unigram matching)"),
)


def _flagged(gaps: pd.DataFrame, model: str, context: str, scorer: str, label: str) -> dict[str, list[str]]:
    """Each group's significant gaps in one measure, as ``"other group (+x.x pts)"`` texts."""
    if gaps.empty:
        return {}
    cell = gaps[(gaps["model"] == model) & (gaps["context"] == context) & (gaps["scorer"] == scorer)
                & (gaps["label"] == label) & (gaps["p_adj"] < SIGNIFICANCE)]
    out: dict[str, list[str]] = {}
    for row in cell.itertuples():
        out.setdefault(row.group_a, []).append(f"{row.group_b} ({100 * row.diff:+.1f} pts)")
        out.setdefault(row.group_b, []).append(f"{row.group_a} ({-100 * row.diff:+.1f} pts)")
    return out


def bold_section(results: Results, _samples: pd.DataFrame, _manifest: dict) -> dict | None:
    """Per domain, per measure: the dot plot and its table; None for a run without BOLD tables.

    Returns
    -------
    dict or None
        ``domains``: a list of ``{name, figures}``; each figure has ``title, svg`` (Markup),
        ``rows`` (``group, n, k, share, ci_low, ci_high, flagged, gaps``), ``pooled`` and
        ``n_flagged``; plus ``ci_label`` and ``meta`` (the analysis's notes).
    """
    polarity = results.table("polarity_shares")
    if polarity.empty:
        return None
    shares = pd.concat([t for t in (results.table("shares"), polarity) if not t.empty], ignore_index=True)
    gaps = pd.concat([t for t in (results.table("gaps"), results.table("polarity_gaps")) if not t.empty],
                     ignore_index=True)
    models = list(dict.fromkeys(shares["model"]))
    domains = []
    for context in dict.fromkeys(shares["context"]):
        figures = []
        for scorer, label, what in MEASURES:
            cell = shares[(shares["context"] == context) & (shares["scorer"] == scorer) & (shares["label"] == label)]
            if cell.empty:
                continue
            rows = []
            for model in models:
                flags = _flagged(gaps, model, context, scorer, label)
                for r in cell[cell["model"] == model].itertuples():
                    rows.append({"group": r.group if len(models) == 1 else f"{model} · {r.group}", "n": int(r.n),
                                 "k": int(r.k), "share": r.share, "ci_low": r.ci_low, "ci_high": r.ci_high,
                                 "flagged": r.group in flags, "gaps": "; ".join(flags.get(r.group, []))})
            frame = pd.DataFrame(rows)
            pooled = float(frame["k"].sum() / frame["n"].sum()) if frame["n"].sum() else None
            title = f"{context}: {what}"
            figures.append({"title": title, "svg": Markup(dot_plot(frame, title=title, reference=pooled)),
                            "rows": frame.sort_values("share", ascending=False).to_dict(orient="records"),
                            "pooled": pooled, "n_flagged": int(frame["flagged"].sum())})
        domains.append({"name": context, "figures": figures})
    return {"domains": domains, "ci_label": ci_label(results), "meta": results.meta.get("bold", {})}


__all__ = ["MEASURES", "bold_section"]
