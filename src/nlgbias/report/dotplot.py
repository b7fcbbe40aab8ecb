"""A dot plot with confidence whiskers: one row per group, sorted by value, as a standalone SVG string.

Made for suites with many groups (tens to hundreds of rows), where stacked bars stop being
readable: each row is a dot at the group's value with a whisker from ``low`` to ``high``,
flagged rows (e.g. groups in a significant gap) are drawn in a second colour with a bold label,
and an optional dashed vertical line marks a reference value (e.g. the rate over all groups).

The height grows with the number of rows (:data:`ROW` px each), so labels never overlap.  Every
piece of text that reaches the SVG (title, group labels) is escaped here: group names are
untrusted text.  No scripts, no external resources.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd
from markupsafe import escape

ROW = 16  # px per row: an 11 px label plus 5 px between labels
TOP = 44  # the title (baseline 16) and, under it, the reference line's value (baseline TOP - 10)
BOTTOM = 40  # tick labels and the legend under the plot
PLOT_WIDTH = 320  # px of the value axis
CHAR_WIDTH = 7  # px per character of 11 px system-ui text, rounded up
MAX_LABEL = 48  # characters: a longer label is cut with "…" and shown whole in its tooltip
LEAST_LABEL_WIDTH = 120
DOT = "#0072b2"  # Okabe-Ito blue
FLAGGED = "#d55e00"  # Okabe-Ito vermillion
WHISKER = "#555"
FONT = "font-family: system-ui, sans-serif; font-size: 11px; fill: #1d1d1f"


@dataclass(frozen=True)
class _Row:
    label: str
    value: float | None
    low: float | None
    high: float | None
    flagged: bool
    n: int | None
    position: int


def _finite(value) -> bool:
    try:
        return value is not None and math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def _nice(lo: float, hi: float) -> tuple[float, float, float]:
    """An axis ``(start, end, step)`` covering ``[lo, hi]`` with 2 to 10 ticks at a round step."""
    if not hi > lo:
        lo, hi = (lo - 0.5, hi + 0.5) if lo == hi and lo not in (0.0,) else (0.0, 1.0)
    raw = (hi - lo) / 5
    exponent = 10 ** math.floor(math.log10(raw))
    step = next(s * exponent for s in (1, 2, 2.5, 5, 10) if raw <= s * exponent)
    return math.floor(lo / step + 1e-9) * step, math.ceil(hi / step - 1e-9) * step, step


def _format(value: float, unit: str) -> str:
    if unit == "%":
        return f"{100 * value:.1f}%"
    return f"{value:.3g}{unit}"


def _tick(value: float, step: float, unit: str) -> str:
    if unit == "%":
        digits = max(0, -math.floor(math.log10(100 * step) + 1e-9))
        return f"{100 * value:.{digits}f}%"
    return f"{value:.3g}{unit}"


def dot_plot(rows: pd.DataFrame, *, title: str, value: str = "share", low: str = "ci_low", high: str = "ci_high",
             label: str = "group", flagged: str | None = "flagged", reference: float | None = None,
             unit: str = "%") -> str:
    """Draw ``rows`` as a sorted dot plot with CI whiskers and return the SVG text.

    Parameters
    ----------
    rows : pandas.DataFrame
        One row per group, with columns ``label`` (the group's name, any text), ``value``,
        ``low`` and ``high`` (the interval; missing or non-finite values draw no whisker), and,
        when ``flagged`` is a column name present in ``rows``, a truthy column marking the rows to
        highlight.  An optional ``n`` column is printed beside each row's value.
    title : str
        Printed above the plot and used as the SVG's accessible name.
    reference : float, optional
        Draws a dashed vertical line at this value (e.g. the rate over all groups).
    unit : str, default "%"
        ``"%"`` reads values as fractions (0.25 prints as 25.0%); any other text is appended to
        the number as printed (``""`` for plain numbers).

    Returns
    -------
    str
        ``<svg …>…</svg>``: rows sorted by value, highest first (rows without a finite value
        last, in their input order); each row is a ``<g class="dot-row">`` (``"dot-row flagged"``
        when flagged) holding its label ``<text>``, its whisker ``<line class="whisker">`` and
        its ``<circle>``.  The height is ``TOP + ROW * len(rows) + BOTTOM`` px.

    >>> svg = dot_plot(pd.DataFrame({"group": ["a", "b"], "share": [0.2, 0.4], "ci_low": [0.1, 0.3],
    ...                              "ci_high": [0.3, 0.5], "flagged": [False, True]}), title="t")
    >>> svg.index(">b</text>") < svg.index(">a</text>")
    True
    """
    missing = [c for c in (label, value, low, high) if c not in rows.columns]
    if missing:
        raise ValueError(f"dot_plot: rows lack the column(s) {', '.join(missing)}; got {', '.join(map(str, rows.columns))}")
    records = []
    for position, (_, r) in enumerate(rows.iterrows()):
        v = float(r[value]) if _finite(r[value]) else None
        lo_ = float(r[low]) if _finite(r[low]) else None
        hi_ = float(r[high]) if _finite(r[high]) else None
        is_flagged = bool(flagged and flagged in rows.columns and r[flagged] is not None and not
                          (isinstance(r[flagged], float) and math.isnan(r[flagged])) and bool(r[flagged]))
        n = r["n"] if "n" in rows.columns and _finite(r["n"]) else None
        records.append(_Row(str(r[label]), v, lo_, hi_, is_flagged, None if n is None else int(n), position))
    records.sort(key=lambda rec: (rec.value is None, -(rec.value or 0.0), rec.position))

    numbers = [x for rec in records for x in (rec.value, rec.low, rec.high) if x is not None]
    if reference is not None and _finite(reference):
        numbers.append(float(reference))
    lo, hi = (min(numbers), max(numbers)) if numbers else (0.0, 1.0)
    if unit == "%" and lo >= 0:
        lo = 0.0
    start, end, step = _nice(lo, hi)
    shown = [rec.label if len(rec.label) <= MAX_LABEL else rec.label[:MAX_LABEL - 1] + "…" for rec in records]
    left = max([LEAST_LABEL_WIDTH] + [CHAR_WIDTH * len(s) + 12 for s in shown])
    side = [(_format(rec.value, unit) if rec.value is not None else "n/a")
            + (f" [{_format(rec.low, unit)}, {_format(rec.high, unit)}]"
               if rec.low is not None and rec.high is not None else "")
            + (f"  n={rec.n}" if rec.n is not None else "") for rec in records]
    right = 16 + CHAR_WIDTH * max([10] + [len(s) for s in side])
    width = left + PLOT_WIDTH + right
    height = TOP + ROW * len(records) + BOTTOM
    bottom_y = TOP + ROW * len(records)

    def x(v: float) -> float:
        return left + PLOT_WIDTH * (v - start) / (end - start)

    body = [f"<style>text {{ {FONT}; }} .muted {{ fill: #6b6b70; }}</style>",
            f'<text x="8" y="16" font-size="12" font-weight="bold">{escape(title)}</text>']
    ticks = []
    t = start
    while t <= end + step / 2:
        ticks.append(t)
        t += step
    for t in ticks:
        tx = x(t)
        body.append(f'<line class="grid" x1="{tx:.1f}" x2="{tx:.1f}" y1="{TOP - 4}" y2="{bottom_y}" stroke="#e5e5ea"/>')
        body.append(f'<text class="muted tick" x="{tx:.1f}" y="{bottom_y + 14}" text-anchor="middle">'
                    f"{escape(_tick(t, step, unit))}</text>")
    if reference is not None and _finite(reference):
        rx = x(float(reference))
        body.append(f'<line class="reference" x1="{rx:.1f}" x2="{rx:.1f}" y1="{TOP - 8}" y2="{bottom_y}" '
                    f'stroke="#333" stroke-dasharray="4 3"><title>reference: {escape(_format(float(reference), unit))}'
                    f"</title></line>")
        body.append(f'<text class="muted" x="{rx:.1f}" y="{TOP - 10}" text-anchor="middle">'
                    f"{escape(_format(float(reference), unit))}</text>")
    for i, (rec, text, extra) in enumerate(zip(records, shown, side)):
        mid = TOP + ROW * i + ROW / 2
        color = FLAGGED if rec.flagged else DOT
        klass = "dot-row flagged" if rec.flagged else "dot-row"
        tooltip = f"{rec.label}: {extra}"
        weight = f' font-weight="bold" style="fill: {FLAGGED}"' if rec.flagged else ""
        parts = [f'<g class="{klass}">', f"<title>{escape(tooltip)}</title>",
                 f'<text class="label" x="{left - 6}" y="{mid + 4:.1f}" text-anchor="end"{weight}>{escape(text)}</text>']
        if rec.low is not None and rec.high is not None:
            a, b = x(rec.low), x(rec.high)
            parts.append(f'<line class="whisker" x1="{a:.1f}" x2="{b:.1f}" y1="{mid:.1f}" y2="{mid:.1f}" '
                         f'stroke="{WHISKER}" stroke-width="1.2"/>')
            for end_x in (a, b):
                parts.append(f'<line class="cap" x1="{end_x:.1f}" x2="{end_x:.1f}" y1="{mid - 3:.1f}" y2="{mid + 3:.1f}" '
                             f'stroke="{WHISKER}"/>')
        if rec.value is not None:
            parts.append(f'<circle cx="{x(rec.value):.1f}" cy="{mid:.1f}" r="{4 if rec.flagged else 3.5}" '
                         f'fill="{color}"/>')
        parts.append(f'<text class="muted value" x="{left + PLOT_WIDTH + 10}" y="{mid + 4:.1f}">{escape(extra)}</text>')
        parts.append("</g>")
        body.append("".join(parts))
    legend_y = bottom_y + 30
    body.append(f'<circle cx="{left + 4}" cy="{legend_y - 4}" r="3.5" fill="{DOT}"/>'
                f'<text class="muted" x="{left + 12}" y="{legend_y}">dot = value, line = CI</text>')
    if flagged and flagged in rows.columns:
        body.append(f'<circle cx="{left + 190}" cy="{legend_y - 4}" r="4" fill="{FLAGGED}"/>'
                    f'<text class="muted" x="{left + 198}" y="{legend_y}" font-weight="bold" style="fill: {FLAGGED}">'
                    f"{escape(flagged)}</text>")
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
            f'viewBox="0 0 {width:.0f} {height:.0f}" role="img" aria-label="{escape(title)}">' + "".join(body) + "</svg>")
