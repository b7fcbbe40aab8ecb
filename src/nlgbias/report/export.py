"""Paper-ready exports of a finished run: tables as LaTeX or Markdown, charts as SVG or PNG files.

In: a run folder (``metrics.json``, ``samples.parquet``, ``manifest.json``) and the formats.
Out: files under ``<folder>/export/``:

``latex``, ``markdown``
    ``shares.tex|md`` (one row per model, context, scorer and group: n and each label's share
    with its CI), ``gaps.tex|md`` (one row per row of ``gaps.csv``), ``model_gaps.tex|md`` (runs
    with several models), ``models.tex|md`` (display name -> full ``--model`` value).  Shares in
    percent, gaps in percentage points, CIs as ``[low, high]``, a significance mark after each gap
    from its Benjamini-Hochberg adjusted p (:data:`MARKS`), the legend under the table.  LaTeX
    tables use booktabs (``\\toprule``, ``\\midrule``, ``\\bottomrule``); every piece of text is
    escaped for its format (group names come from user YAML, model names from the command line).
``svg``, ``png``
    ``charts/<name>.svg|png``: each chart of the report as a standalone file with the report's
    look (the same SVG, plus its namespace, the report's text styles and a white background).
    PNG needs the optional ``resvg-py`` package (:data:`PNG_INSTALL`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import pandas as pd
from markupsafe import Markup, escape

from nlgbias.errors import InputError, option
from nlgbias.metrics.results import Results
from nlgbias.report.folder import read_run_folder
from nlgbias.report.html import Section, _environment
from nlgbias.report.sections import ci_label, format_p
from nlgbias.report.svg import chart_css
from nlgbias.store.export import write_bytes, write_text

FORMATS = ("latex", "markdown", "svg", "png")
MARKS = ((0.001, "***"), (0.01, "**"), (0.05, "*"))  # adjusted p under the level -> the mark
PNG_ZOOM = 2  # PNG pixels per SVG pixel (a 520 px wide chart becomes 1040 px: sharp in print)
PNG_INSTALL = "pip install 'nlgbias[export]'"
EXPORT_FOLDER = "export"
SVG_NS = "http://www.w3.org/2000/svg"
TITLE_HEIGHT = 24  # px added above a chart whose title the report prints outside its SVG


def export_formats(values: Iterable[str]) -> tuple[str, ...]:
    """The ``--export`` values (repeatable, each a comma list) as a tuple of known formats, in order.

    Raises
    ------
    InputError
        An unknown format, or ``png`` without the ``resvg-py`` package (with how to install it).

    >>> export_formats(["latex,markdown", "latex"])
    ('latex', 'markdown')
    """
    formats: list[str] = []
    for value in values:
        names = [part.strip().lower() for part in str(value).split(",") if part.strip()]
        if not names:
            raise InputError(f"{option('--export', repr(value), keyword='export', many=True)}: empty value; "
                             f"choose from {', '.join(FORMATS)}")
        for name in names:
            if name not in FORMATS:
                raise InputError(f"{option('--export', name, keyword='export', many=True)}: unknown export format "
                                 f"{name!r}; choose from {', '.join(FORMATS)} (comma-separated or repeated)")
            if name not in formats:
                formats.append(name)
    if "png" in formats:
        try:
            import resvg_py  # noqa: F401
        except ImportError:
            raise InputError(f"{option('--export', 'png', keyword='export', many=True)}: needs the resvg-py "
                             f"package; install it with: {PNG_INSTALL}") from None
    return tuple(formats)


# -- tables -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Table:
    """A format-free table: header, rows of cell text, alignment (``l``/``r`` per column)."""

    name: str
    caption: str
    header: Sequence[str]
    align: str
    rows: Sequence[Sequence[str]]
    notes: str  # a sentence under the table (what the numbers are)
    marks: bool = False  # the legend of the significance marks goes under the table


def significance_mark(p_adj: float) -> str:
    """``***``, ``**``, ``*`` or ``""`` for an adjusted p-value (:data:`MARKS`).

    >>> [significance_mark(p) for p in (0.0005, 0.005, 0.03, 0.05, float("nan"))]
    ['***', '**', '*', '', '']
    """
    if p_adj is None or not math.isfinite(p_adj):
        return ""
    return next((mark for level, mark in MARKS if p_adj < level), "")


def _number(value: float, digits: int = 1, *, sign: bool = False) -> str:
    if value is None or not math.isfinite(value):
        return "–"
    return f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"


def _interval(low: float, high: float, *, scale: float = 100, sign: bool = False) -> str:
    return f"[{_number(scale * low, sign=sign)}, {_number(scale * high, sign=sign)}]"


def share_table(results: Results, manifest: dict) -> Table:
    """One row per (model, context, scorer, group): n, then each label's share (%) with its CI."""
    shares = results.shares
    labels = list(results.meta.get("labels", dict.fromkeys(shares["label"])))
    rows = []
    for (model, context, scorer, group), cell in shares.groupby(["model", "context", "scorer", "group"], sort=False):
        by_label = cell.set_index("label")
        row = [model, context, scorer, group, str(int(cell["n"].iloc[0]))]
        for label in labels:
            if label in by_label.index:
                r = by_label.loc[label]
                row.append(f"{_number(100 * r['share'])} {_interval(r['ci_low'], r['ci_high'])}")
            else:
                row.append("–")
        rows.append(row)
    return Table("shares", f"Label shares per group (%, {ci_label(results)}), run {manifest.get('run_id')}",
                 ["Model", "Context", "Scorer", "Group", "n", *[f"{label} % [CI]" for label in labels]],
                 "llll" + "r" * (1 + len(labels)), rows, f"CI: {results.meta.get('ci', 'bootstrap')}.")


def gap_table(results: Results, manifest: dict, *, between: str = "group") -> Table:
    """One row per gap (``between="group"``: ``gaps``; ``"model"``: ``model_gaps``), in points."""
    gaps = results.gaps if between == "group" else results.model_gaps
    fixed = ["model", "context", "scorer", "label"] if between == "group" else ["context", "scorer", "group", "label"]
    a, b = f"{between}_a", f"{between}_b"
    rows = []
    for r in gaps.to_dict(orient="records"):
        rows.append([*(str(r[c]) for c in fixed), f"{r[a]} – {r[b]}", f"{int(r['n_a'])} / {int(r['n_b'])}",
                     _number(100 * r["diff"], sign=True) + significance_mark(r["p_adj"]),
                     _interval(r["ci_low"], r["ci_high"], sign=True), format_p(r["p"]), format_p(r["p_adj"])])
    what = "Group gaps (first group minus second)" if between == "group" else "Model gaps (first model minus second)"
    return Table("gaps" if between == "group" else "model_gaps",
                 f"{what} in percentage points with {ci_label(results)}, run {manifest.get('run_id')}",
                 [*(c.capitalize() for c in fixed), f"{between.capitalize()}s", "n", "Gap (pts)", "CI", "p",
                  "adj. p"], "lllll" + "rrrrr", rows,
                 f"CI: {results.meta.get('ci', 'bootstrap')}. p: {results.meta.get('test', 'permutation test')}. "
                 f"adj. p: {results.meta.get('correction', 'Benjamini-Hochberg')}.", marks=True)


def models_table(manifest: dict) -> Table:
    """Display name -> full ``--model`` value, backend and fingerprint."""
    rows = [[m.get("name", m["model"]), m["model"], str(m.get("backend", "")), str(m.get("fingerprint", ""))[:16]]
            for m in manifest.get("models", [])]
    return Table("models", f"Models of run {manifest.get('run_id')}", ["Name", "Model", "Backend", "Fingerprint"],
                 "llll", rows, "Name: as in every table and chart; Model: the value given to --model.")


def tables(results: Results, manifest: dict) -> list[Table]:
    """The tables to export: shares, gaps, model gaps (several models) and models, where the run has them."""
    out = []
    if not results.shares.empty:
        out.append(share_table(results, manifest))
        out.append(gap_table(results, manifest, between="group"))
        if not results.model_gaps.empty:
            out.append(gap_table(results, manifest, between="model"))
    out.append(models_table(manifest))
    return out


LATEX_SPECIALS = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                  "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
                  "<": r"\textless{}", ">": r"\textgreater{}", "–": "--", "·": r"\textperiodcentered{}",
                  "…": r"\ldots{}"}
_LATEX_PATTERN = re.compile("|".join(re.escape(c) for c in LATEX_SPECIALS))


def latex_escape(text: str) -> str:
    r"""Text safe in a LaTeX document: ``& % $ # _ { } ~ ^ \`` and ``< >`` as their text commands.

    >>> print(latex_escape("50% of A&B_{x} ~ $5 #1 ^ \\"))
    50\% of A\&B\_\{x\} \textasciitilde{} \$5 \#1 \textasciicircum{} \textbackslash{}
    """
    return _LATEX_PATTERN.sub(lambda m: LATEX_SPECIALS[m.group(0)], str(text))


def _latex_cell(text: str) -> str:
    cell = latex_escape(text)
    cell = re.sub(r"(?<![\w.])-(?=\d)", "$-$", cell)  # a minus sign, not a hyphen
    return re.sub(r"(\*{1,3})$", lambda m: f"$^{{{m.group(1)}}}$", cell)  # the significance mark


def _legend(fmt: str) -> str:
    """What the significance marks mean, in ``latex`` or plain text."""
    if fmt == "latex":
        return ", ".join(f"$^{{{mark}}}$ adjusted $p<{level:g}$" for level, mark in reversed(MARKS))
    return ", ".join(f"{mark} adjusted p < {level:g}" for level, mark in reversed(MARKS))


def latex(table: Table) -> str:
    """A ``table`` environment with a booktabs ``tabular``, caption, label and notes under it."""
    lines = [f"% nlgbias export: {table.name} (needs \\usepackage{{booktabs}})",
             "\\begin{table}[htbp]", "\\centering", "\\small",
             f"\\caption{{{latex_escape(table.caption)}}}", f"\\label{{tab:nlgbias-{table.name.replace('_', '-')}}}",
             f"\\begin{{tabular}}{{{table.align}}}", "\\toprule",
             " & ".join(latex_escape(h) for h in table.header) + " \\\\", "\\midrule"]
    lines += [" & ".join(_latex_cell(c) for c in row) + " \\\\" for row in table.rows]
    lines += ["\\bottomrule", "\\end{tabular}", "", "\\smallskip", "{\\footnotesize " + latex_escape(table.notes)
              + (" " + _legend("latex") + "." if table.marks else "") + "\\par}", "\\end{table}"]
    return "\n".join(lines) + "\n"


_MARKDOWN_SPECIALS = re.compile(r"([\\`*_|<>])")


def markdown_escape(text: str) -> str:
    r"""Text safe in a Markdown table cell: Markdown's special characters backslash-escaped.

    >>> print(markdown_escape("a|b *c* <i>"))
    a\|b \*c\* \<i\>
    """
    return _MARKDOWN_SPECIALS.sub(r"\\\1", str(text))


def markdown(table: Table) -> str:
    """A pipe table with a bold caption above and the notes (and the marks' legend) under it."""
    align = {"l": ":---", "r": "---:"}
    lines = [f"**{markdown_escape(table.caption)}**", "",
             "| " + " | ".join(markdown_escape(h) for h in table.header) + " |",
             "| " + " | ".join(align[a] for a in table.align) + " |"]
    lines += ["| " + " | ".join(markdown_escape(c) for c in row) + " |" for row in table.rows]
    legend = " " + markdown_escape(_legend("text")) + "." if table.marks else ""
    lines += ["", markdown_escape(table.notes) + legend]
    return "\n".join(lines) + "\n"


# -- charts -------------------------------------------------------------------------------------

def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", str(text).lower()).strip("-")[:60] or "chart"


def standalone_svg(markup: str, *, title: str | None = None) -> str:
    """A report chart as an SVG document: namespace, the report's text styles, a white background,
    and ``title`` above it (for charts whose title the report prints outside the SVG)."""
    head, _, rest = str(markup).strip().partition(">")
    body = rest[: rest.rindex("</svg>")]
    size = re.search(r'\bwidth="([0-9.]+)" height="([0-9.]+)"', head)
    if size is None:
        raise ValueError(f"standalone_svg: the chart has no width and height ({head[:80]})")
    width, height = float(size.group(1)), float(size.group(2))
    label = re.search(r'\baria-label="([^"]*)"', head)
    top = TITLE_HEIGHT if title else 0
    parts = [f'<svg xmlns="{SVG_NS}" width="{width:.0f}" height="{height + top:.0f}" '
             f'viewBox="0 0 {width:.0f} {height + top:.0f}" role="img" aria-label="{label.group(1) if label else ""}">',
             f"<style>{chart_css()}</style>", '<rect width="100%" height="100%" fill="#fff"/>']
    if title:
        parts.append(f'<text x="8" y="16" style="font-size: 13px; font-weight: 600">{escape(title)}</text>'
                     f'<g transform="translate(0 {top})">{body}</g>')
    else:
        parts.append(body)
    return "".join(parts) + "</svg>\n"


def _svgs(value) -> list[Markup]:
    """Every SVG chart in a section's context, in order."""
    if isinstance(value, Markup) and value.lstrip().startswith("<svg"):
        return [value]
    if isinstance(value, dict):
        return [svg for v in value.values() for svg in _svgs(v)]
    if isinstance(value, (list, tuple)):
        return [svg for v in value for svg in _svgs(v)]
    return []


def charts(results: Results, samples: pd.DataFrame, manifest: dict,
           sections: Sequence[Section]) -> list[tuple[str, str]]:
    """``(file stem, standalone SVG)`` for each chart of the report's ``sections``, in the report's order."""
    out: list[tuple[str, str]] = []
    panel = _environment().get_template("_panel.svg.j2")
    for section in sections:
        context = section.context(results, samples, manifest)
        if not context:
            continue
        for p in context.get("panels", []) if section.name == "shares" else []:
            out.append((f"shares-{_slug(p['context'])}-{_slug(p['scorer'])}",
                        standalone_svg(panel.render(p=p), title=p["title"])))
        for i, svg in enumerate(_svgs({k: v for k, v in context.items() if k != "panels"}), start=1):
            label = re.search(r'aria-label="([^"]*)"', svg)
            out.append((f"{_slug(section.name)}-{i:02d}-{_slug(label.group(1) if label else '')}", standalone_svg(svg)))
    return out


def png_bytes(svg: str, *, zoom: float = PNG_ZOOM) -> bytes:
    """An SVG document rendered as PNG by resvg (``resvg-py``; :data:`PNG_INSTALL`)."""
    import resvg_py

    return bytes(resvg_py.svg_to_bytes(svg_string=svg, zoom=zoom))


# -- the run folder -----------------------------------------------------------------------------

def export_run(folder: str | Path, formats: Iterable[str], *, sections: Sequence[Section]) -> list[Path]:
    """Write the exports of the run in ``folder`` to ``folder/export/``; return the files written.

    ``formats``: any of :data:`FORMATS` (each may be a comma list, as on the command line);
    ``sections``: the report's sections, whose charts the ``svg`` and ``png`` formats write.
    """
    formats = export_formats(formats)
    folder = Path(folder)
    results, samples, manifest = read_run_folder(folder)
    out = folder / EXPORT_FOLDER
    out.mkdir(exist_ok=True)
    written = []
    writers = {"latex": (".tex", latex), "markdown": (".md", markdown)}
    for fmt in (f for f in formats if f in writers):
        suffix, render = writers[fmt]
        for table in tables(results, manifest):
            written.append(write_text(out / f"{table.name}{suffix}", render(table)))
    if "svg" in formats or "png" in formats:
        (out / "charts").mkdir(exist_ok=True)
        for stem, svg in charts(results, samples, manifest, sections):
            if "svg" in formats:
                written.append(write_text(out / "charts" / f"{stem}.svg", svg))
            if "png" in formats:
                written.append(write_bytes(out / "charts" / f"{stem}.png", png_bytes(svg)))
    return written
