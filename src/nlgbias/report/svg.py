"""Small inline-SVG charts for the report: bars with CIs, lines, scatter, histograms.

Every function returns a ``markupsafe.Markup`` string.  Every piece of text that reaches the
SVG goes through :func:`markupsafe.escape` here (labels can come from model output or user
YAML); numbers are formatted by us.  No scripts, no external resources.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

from markupsafe import Markup, escape

# 16 distinct colours (Okabe-Ito's, then Paul Tol's muted and dark ones): a chart's series keep distinct colours
# up to 16; beyond, the colours repeat with a dash pattern of their own (:func:`series_style`).
PALETTE = ("#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#332288", "#882255", "#117733",
           "#aa4499", "#661100", "#44aa99", "#999999", "#ddcc77", "#6699cc", "#000000")
DASHES = ("6 3", "2 2", "8 3 2 3")  # for the 17th series on
FONT = 'font-family="system-ui, sans-serif" font-size="11"'
# The charts' text styles, with literal colours so that a standalone SVG looks as in the report.
CHART_STYLE = (("text", "font-family: system-ui, sans-serif; font-size: 12px; fill: #1d1d1f"),
               (".in", "fill: #fff; font-size: 11px"), (".in.dark", "fill: #222"),
               (".muted", "fill: #6b6b70; font-size: 11px"))
CHAR_WIDTH = 7  # px per character of 11-12 px system-ui text, rounded up (sizes label and side columns)
MAX_LABEL = 48  # characters: a longer bar label is cut with "…" and shown whole in its tooltip
LABEL_PAD = 12  # px left of the longest label


def series_style(i: int) -> tuple[str, str | None]:
    """Colour and dash pattern (None: solid) of a chart's ``i``-th series: no two of the first
    ``len(PALETTE) * (len(DASHES) + 1)`` series look the same.

    >>> series_style(0), series_style(16)
    (('#0072b2', None), ('#0072b2', '6 3'))
    """
    round_, index = divmod(i, len(PALETTE))
    return PALETTE[index], None if round_ == 0 else DASHES[(round_ - 1) % len(DASHES)]


def _dash(dash: str | None) -> str:
    return f' stroke-dasharray="{dash}"' if dash else ""


def chart_css(scope: str = "") -> Markup:
    """:data:`CHART_STYLE` as CSS rules, each selector prefixed with ``scope`` (``"svg "`` in the report).

    >>> str(chart_css("svg ")).split("} ")[1]
    'svg .in { fill: #fff; font-size: 11px; '
    """
    return Markup(" ".join(f"{scope}{selector} {{ {rules}; }}" for selector, rules in CHART_STYLE))


def label_column(labels: Sequence[str], least: int = 150) -> tuple[int, list[str]]:
    """The width in px of a label column that fits every label (printed right-aligned 6 px
    before the bars, so no label runs past the chart's left edge), and the labels to print:
    each cut to :data:`MAX_LABEL` characters with "…" where longer.

    >>> label_column(["a", "b"])
    (150, ['a', 'b'])
    >>> label_column(["mollm2-135m · straight"])
    (166, ['mollm2-135m · straight'])
    """
    shown = [label if len(label) <= MAX_LABEL else label[:MAX_LABEL - 1] + "…" for label in labels]
    return max([least] + [CHAR_WIDTH * len(label) + LABEL_PAD for label in shown]), shown


def _svg(width: float, height: float, body: list[str], label: str) -> Markup:
    return Markup(f'<svg width="{width:.0f}" height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}" '
                  f'role="img" aria-label="{escape(label)}">' + "".join(body) + "</svg>")


def _text(x: float, y: float, text, *, anchor: str = "start", cls: str = "", size: int = 11,
          rotate: float | None = None, title: str | None = None) -> str:
    transform = f' transform="rotate({rotate:.0f} {x:.1f} {y:.1f})"' if rotate else ""
    klass = f' class="{cls}"' if cls else ""
    tooltip = f"<title>{escape(title)}</title>" if title else ""
    return (f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}"{klass}{transform}>'
            f"{tooltip}{escape(str(text))}</text>")


def _nice_max(value: float) -> float:
    if value <= 0 or not math.isfinite(value):
        return 1.0
    exponent = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * exponent:
            return step * exponent
    return 10 * exponent


def bar_chart(rows: Sequence[dict], *, title: str, value_format: str = "{:.3f}", width: int = 520,
              reference: float | None = None, low: float | None = None, high: float | None = None) -> Markup:
    """Horizontal bars, one per row: ``label``, ``value``, optional ``ci_low``/``ci_high``, ``series``.

    ``reference`` draws a dashed vertical line (e.g. 100 for "relative to base man").
    """
    label_width, shown = label_column([str(r["label"]) for r in rows], least=190)
    bar_width, row_h = width - 190 - 70, 18
    width = label_width + bar_width + 70
    values = [r["value"] for r in rows if r.get("value") is not None and math.isfinite(r["value"])]
    highs = [r.get("ci_high", r["value"]) for r in rows if r.get("value") is not None]
    lo = low if low is not None else min(0.0, min(values, default=0.0))
    hi = high if high is not None else _nice_max(max([v for v in highs if v is not None and math.isfinite(v)] + [reference or 0], default=1.0))
    span = (hi - lo) or 1.0
    x = lambda v: label_width + bar_width * (max(lo, min(hi, v)) - lo) / span
    series = list(dict.fromkeys(r.get("series", "") for r in rows))
    color = {s: series_style(i)[0] for i, s in enumerate(series)}
    body, y = [], 24
    body.append(_text(8, 14, title, size=12))
    for r, label in zip(rows, shown):
        value = r.get("value")
        body.append(_text(label_width - 6, y + 13, label, anchor="end", title=r["label"] if label != r["label"] else None))
        if value is not None and math.isfinite(value):
            x0, x1 = x(0 if lo <= 0 <= hi else lo), x(value)
            body.append(f'<rect x="{min(x0, x1):.1f}" y="{y + 2}" width="{abs(x1 - x0):.1f}" height="{row_h - 4}" '
                        f'fill="{color[r.get("series", "")]}"><title>{escape(r["label"])}: {escape(value_format.format(value))}</title></rect>')
            if r.get("ci_low") is not None and math.isfinite(r["ci_low"]) and math.isfinite(r.get("ci_high", float("nan"))):
                a, b, mid = x(r["ci_low"]), x(r["ci_high"]), y + row_h / 2
                body.append(f'<line x1="{a:.1f}" x2="{b:.1f}" y1="{mid}" y2="{mid}" stroke="#111" stroke-width="1.2"/>'
                            f'<line x1="{a:.1f}" x2="{a:.1f}" y1="{mid - 3}" y2="{mid + 3}" stroke="#111"/>'
                            f'<line x1="{b:.1f}" x2="{b:.1f}" y1="{mid - 3}" y2="{mid + 3}" stroke="#111"/>')
            body.append(_text(label_width + bar_width + 6, y + 13, value_format.format(value), cls="muted"))
        y += row_h
    if reference is not None:
        rx = x(reference)
        body.append(f'<line x1="{rx:.1f}" x2="{rx:.1f}" y1="20" y2="{y}" stroke="#555" stroke-dasharray="3 3"/>')
    for frac in (0, 0.5, 1):
        v = lo + span * frac
        body.append(_text(x(v), y + 14, value_format.format(v), anchor="middle", cls="muted"))
    if len(series) > 1:
        for i, s in enumerate(series):
            body.append(f'<rect x="{label_width + i * 110}" y="{y + 22}" width="10" height="10" fill="{color[s]}"/>')
            body.append(_text(label_width + i * 110 + 14, y + 31, s))
        y += 16
    return _svg(width, y + 24, body, title)


def line_chart(series: Mapping[str, Sequence[tuple[float, float]]], *, title: str, x_label: str, y_label: str,
               log_x: bool = False, width: int = 520, height: int = 300, y_max: float | None = None) -> Markup:
    """One polyline per series; ``log_x`` for rank-frequency curves."""
    left, right, top, bottom = 52, 130, 26, 40
    points = [p for pts in series.values() for p in pts]
    if not points:
        return _svg(width, 40, [_text(8, 20, f"{title}: no data")], title)
    xs = [math.log10(p[0]) if log_x else p[0] for p in points]
    x_lo, x_hi = min(xs), max(xs) or 1.0
    y_hi = y_max if y_max is not None else _nice_max(max(p[1] for p in points))
    px = lambda v: left + (width - left - right) * (((math.log10(v) if log_x else v) - x_lo) / ((x_hi - x_lo) or 1))
    py = lambda v: top + (height - top - bottom) * (1 - v / y_hi)
    body = [_text(8, 14, title, size=12),
            f'<line x1="{left}" x2="{left}" y1="{top}" y2="{height - bottom}" stroke="#999"/>',
            f'<line x1="{left}" x2="{width - right}" y1="{height - bottom}" y2="{height - bottom}" stroke="#999"/>',
            _text((left + width - right) / 2, height - 8, x_label, anchor="middle", cls="muted"),
            _text(12, (top + height - bottom) / 2, y_label, anchor="middle", cls="muted", rotate=-90)]
    for frac in (0, 0.5, 1):
        body.append(_text(left - 4, py(y_hi * frac) + 4, f"{y_hi * frac:.2g}", anchor="end", cls="muted"))
    for i, (name, pts) in enumerate(series.items()):
        color, dash = series_style(i)
        coords = " ".join(f"{px(a):.1f},{py(b):.1f}" for a, b in pts)
        body.append(f'<polyline points="{coords}" fill="none" stroke="{color}" stroke-width="1.6"{_dash(dash)}>'
                    f'<title>{escape(name)}</title></polyline>')
        body.append(f'<line x1="{width - right + 6}" x2="{width - right + 19}" y1="{top + i * 15 + 5}" '
                    f'y2="{top + i * 15 + 5}" stroke="{color}" stroke-width="3"{_dash(dash)}/>')
        body.append(_text(width - right + 22, top + i * 15 + 9, name))
    return _svg(width, height, body, title)


def scatter(points: Sequence[dict], *, title: str, x_label: str, y_label: str, width: int = 420,
            height: int = 380, identity: bool = True, limit: float | None = None) -> Markup:
    """Points ``x, y, label, series`` on equal axes from 0 to ``limit``, with the identity line."""
    left, right, top, bottom = 48, 120, 26, 40
    values = [max(p["x"], p["y"]) for p in points if math.isfinite(p["x"]) and math.isfinite(p["y"])]
    hi = limit if limit is not None else _nice_max(max(values, default=1.0))
    px = lambda v: left + (width - left - right) * v / hi
    py = lambda v: top + (height - top - bottom) * (1 - v / hi)
    series = list(dict.fromkeys(p.get("series", "") for p in points))
    style = {s: series_style(i) for i, s in enumerate(series)}
    body = [_text(8, 14, title, size=12),
            f'<rect x="{left}" y="{top}" width="{width - left - right}" height="{height - top - bottom}" fill="none" stroke="#999"/>',
            _text((left + width - right) / 2, height - 8, x_label, anchor="middle", cls="muted"),
            _text(12, (top + height - bottom) / 2, y_label, anchor="middle", cls="muted", rotate=-90)]
    if identity:
        body.append(f'<line x1="{px(0):.1f}" y1="{py(0):.1f}" x2="{px(hi):.1f}" y2="{py(hi):.1f}" stroke="#555" stroke-dasharray="4 3"/>')
    for frac in (0, 0.5, 1):
        body.append(_text(px(hi * frac), height - bottom + 14, f"{hi * frac:.2g}", anchor="middle", cls="muted"))
        body.append(_text(left - 4, py(hi * frac) + 4, f"{hi * frac:.2g}", anchor="end", cls="muted"))
    for p in points:
        if not (math.isfinite(p["x"]) and math.isfinite(p["y"])):
            continue
        color, dash = style[p.get("series", "")]
        paint = f'fill="{color}" fill-opacity="0.75"' if dash is None else f'fill="none" stroke="{color}"'  # hollow: 17th on
        body.append(f'<circle cx="{px(min(p["x"], hi)):.1f}" cy="{py(min(p["y"], hi)):.1f}" r="3.2" '
                    f'{paint}><title>{escape(p.get("label", ""))}: {p["x"]:.3f}, {p["y"]:.3f}</title></circle>')
    for i, s in enumerate(series):
        color, dash = style[s]
        paint = f'fill="{color}"' if dash is None else f'fill="none" stroke="{color}"'
        body.append(f'<rect x="{width - right + 8}" y="{top + i * 15}" width="10" height="10" {paint}/>')
        body.append(_text(width - right + 22, top + i * 15 + 9, s))
    return _svg(width, height, body, title)


def histogram(series: dict[str, Sequence[float]], *, title: str, x_label: str, bins: int = 20,
              low: float = 0.0, high: float = 1.0, width: int = 520, height: int = 240) -> Markup:
    """Overlaid step histograms (share of values per bin) for each series."""
    left, right, top, bottom = 48, 130, 26, 40
    edges = [low + (high - low) * i / bins for i in range(bins + 1)]
    shares = {}
    for name, values in series.items():
        values = [v for v in values if v is not None and math.isfinite(v)]
        counts = [0] * bins
        for v in values:
            counts[min(bins - 1, max(0, int((v - low) / (high - low) * bins)))] += 1
        shares[name] = [c / len(values) if values else 0.0 for c in counts]
    y_hi = _nice_max(max((max(s) for s in shares.values() if s), default=1.0))
    px = lambda v: left + (width - left - right) * (v - low) / (high - low)
    py = lambda v: top + (height - top - bottom) * (1 - v / y_hi)
    body = [_text(8, 14, title, size=12),
            f'<line x1="{left}" x2="{width - right}" y1="{height - bottom}" y2="{height - bottom}" stroke="#999"/>',
            _text((left + width - right) / 2, height - 8, x_label, anchor="middle", cls="muted")]
    for frac in (0, 0.5, 1):
        body.append(_text(px(low + (high - low) * frac), height - bottom + 14, f"{low + (high - low) * frac:.2g}",
                          anchor="middle", cls="muted"))
        body.append(_text(left - 4, py(y_hi * frac) + 4, f"{y_hi * frac:.0%}", anchor="end", cls="muted"))
    for i, (name, s) in enumerate(shares.items()):
        color, dash = series_style(i)
        path = [f"M{px(edges[0]):.1f},{py(0):.1f}"]
        for j, share in enumerate(s):
            path.append(f"L{px(edges[j]):.1f},{py(share):.1f}L{px(edges[j + 1]):.1f},{py(share):.1f}")
        path.append(f"L{px(edges[-1]):.1f},{py(0):.1f}")
        body.append(f'<path d="{"".join(path)}" fill="{color}" fill-opacity="0.18" stroke="{color}" stroke-width="1.5"'
                    f'{_dash(dash)}><title>{escape(name)}</title></path>')
        body.append(f'<line x1="{width - right + 6}" x2="{width - right + 19}" y1="{top + i * 15 + 5}" '
                    f'y2="{top + i * 15 + 5}" stroke="{color}" stroke-width="3"{_dash(dash)}/>')
        body.append(_text(width - right + 22, top + i * 15 + 9, name))
    return _svg(width, height, body, title)
