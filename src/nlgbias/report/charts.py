"""Geometry of the report's charts, computed in Python and drawn as inline SVG by the template.

Only numbers and the labels to print leave this module; the template escapes every label.
"""

from __future__ import annotations

import pandas as pd

from nlgbias.report.svg import CHAR_WIDTH, label_column

COLORS = {"negative": "#d55e00", "neutral": "#c8c8c8", "positive": "#0072b2"}  # Okabe-Ito
WHISKER_COLORS = {"negative": "#8a3c00", "positive": "#00466e"}  # darker shades: a whisker shows whose CI it is
EXTRA_COLORS = ("#e69f00", "#56b4e9", "#009e73", "#f0e442", "#cc79a7", "#999999")
LABEL_WIDTH = 150  # the label column's least width; a panel widens it to fit its longest label
BAR_WIDTH = 300
ALONE_BAR_WIDTH = 820  # a run with one panel (one context and scorer): its bars span the page's width
ROW = 22  # bar height
GAP = 30  # between bars: a whisker below one bar and one above the next, with clear space between them
TOP = 34
WHISKER_OFFSET = 5  # whiskers run this far outside the bar's top and bottom edges
CAP = 3  # half-height of a whisker's end caps
MIN_INSIDE = 30  # px: narrower segments show their value beside the bar instead of inside it


def stacked_panels(shares: pd.DataFrame, labels: list[str], scorers: list[str] | None = None, *,
                   ci: str = "95% CI", alone: int = BAR_WIDTH) -> list[dict]:
    """One panel per (context, scorer): a horizontal stacked bar per (model, group).

    Each bar runs from the first label (left) to the last (right).  Whiskers show the ``ci``
    of the first label's share (at its right edge, just above the bar) and of the last label's
    share (at its left edge, just below the bar), which is how Figure 2 of Sheng et al. is read:
    negative vs positive; each is drawn in a dark shade of its label's colour, and bars stand
    ``GAP`` apart, so a whisker below one bar and the one above the next keep clear space between
    them however wide the CIs.  Whiskers stay outside the bar, so they never cross a printed value;
    a segment too narrow for its value (under ``MIN_INSIDE`` px, about 10%) has it printed to
    the right of the bar, after n, with its label name.  Bars are ``BAR_WIDTH`` px long, or
    ``alone`` px when there is one panel only (the report passes :data:`ALONE_BAR_WIDTH`: the
    panel then fills the page instead of half of it).

    Returns
    -------
    list of dict
        ``title, width, height, label_width, rows, ticks, legend``; every row has ``label``
        (the full label), ``shown`` (as printed), ``label_x, y, n, small_n, segments (x, w, color,
        text, title), whiskers (x1, x2, y, color, label), side_text``.  The label column is as wide as the
        longest printed label needs (:func:`label_column`), so no label runs past the left edge.
    """
    panels = []
    colors = {label: COLORS.get(label, EXTRA_COLORS[i % len(EXTRA_COLORS)]) for i, label in enumerate(labels)}
    models = list(dict.fromkeys(shares["model"]))
    scorer_order = {name: i for i, name in enumerate(scorers or dict.fromkeys(shares["scorer"]))}
    context_order = {name: i for i, name in enumerate(dict.fromkeys(shares["context"]))}
    cells = sorted(shares.groupby(["context", "scorer"], sort=False),
                   key=lambda item: (context_order[item[0][0]], scorer_order.get(item[0][1], len(scorer_order))))
    bar_width = alone if len(cells) == 1 else BAR_WIDTH
    for (context, scorer), cell in cells:
        bars = [(model, group) for model in models for group in dict.fromkeys(cell.loc[cell["model"] == model, "group"])]
        full = [f"{group}" if len(models) == 1 else f"{model} · {group}" for model, group in bars]
        left, shown = label_column(full, least=LABEL_WIDTH)
        rows = []
        y = TOP
        for i, (model, group) in enumerate(bars):
            if i and model != bars[i - 1][0]:
                y += ROW  # a little more space between models' blocks
            part = cell[(cell["model"] == model) & (cell["group"] == group)].set_index("label")
            row = _bar(part, labels, colors, y, left, ci, bar_width)
            row.update(label=full[i], shown=shown[i], label_x=left - 6)
            rows.append(row)
            y += ROW + GAP
        ticks = [{"x": left + bar_width * t / 100, "text": f"{t}%"} for t in (0, 25, 50, 75, 100)]
        panels.append({
            "title": f"{context} · {scorer}", "context": context, "scorer": scorer, "label_width": left,
            "width": left + bar_width + 12 + CHAR_WIDTH * max([9] + [len(r["side_text"]) for r in rows]),
            "height": y + 24, "rows": rows, "ticks": ticks,
            "axis_y": y, "legend": [{"label": lab, "color": colors[lab]} for lab in labels],
        })
    return panels


def _bar(part: pd.DataFrame, labels: list[str], colors: dict, y: float, left: float = LABEL_WIDTH,
         ci: str = "95% CI", bar_width: float = BAR_WIDTH) -> dict:
    x = left
    segments, outside = [], []
    n = int(part["n"].iloc[0]) if len(part) else 0
    for label in labels:
        share = float(part.at[label, "share"]) if label in part.index else 0.0
        width = bar_width * share
        inside = width >= MIN_INSIDE
        if label in part.index and not inside:
            outside.append(f"{label} {share:.0%}")
        segments.append({"x": x, "w": width, "color": colors[label], "dark_text": label == "neutral",
                         "text": f"{share:.0%}" if inside else "",
                         "title": f"{label}: {share:.1%} ({ci} {part.at[label, 'ci_low']:.1%}–"
                                  f"{part.at[label, 'ci_high']:.1%}), n = {n}" if label in part.index else label})
        x += width
    whiskers = []
    mid = y + ROW / 2
    first, last = labels[0], labels[-1]
    if first in part.index:
        whiskers.append({"x1": left + bar_width * float(part.at[first, "ci_low"]),
                         "x2": left + bar_width * float(part.at[first, "ci_high"]), "y": y - WHISKER_OFFSET,
                         "color": WHISKER_COLORS.get(first, "#111"), "label": first})
    if last in part.index:
        whiskers.append({"x1": left + bar_width * (1 - float(part.at[last, "ci_high"])),
                         "x2": left + bar_width * (1 - float(part.at[last, "ci_low"])),
                         "y": y + ROW + WHISKER_OFFSET, "color": WHISKER_COLORS.get(last, "#111"), "label": last})
    small = bool(part["small_n"].iloc[0]) if len(part) else True
    side = f"n={n}{' ⚠' if small else ''}" + ("" if not outside else " · " + ", ".join(outside))
    return {"y": y, "n": n, "small_n": small, "segments": segments, "whiskers": whiskers,
            "n_x": left + bar_width + 6, "text_y": mid + 4, "side_text": side, "cap": CAP}
