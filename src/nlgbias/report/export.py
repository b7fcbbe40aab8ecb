"""Paper-ready exports: tables as LaTeX or Markdown, charts as SVG or PNG files.

In: a finished run's folder (``metrics.json``, ``samples.parquet``, ``manifest.json``), or a
report over several runs (:class:`nlgbias.pipeline.combine.Combined`), the formats and a
:class:`~nlgbias.report.paper_tables.RowFilter`.  Out: files under ``export/`` (a combined
report: ``DIR/export/`` for one part, ``DIR/part-N/export/`` for several):

``latex``, ``markdown``
    ``shares.tex|md`` (one row per model, context, scorer and group: n and each label's share
    with its CI), ``gaps.tex|md`` (one row per row of ``gaps.csv``), ``model_gaps.tex|md`` and
    ``gap_differences.tex|md`` (several models), ``models.tex|md`` (display name -> full
    ``--model`` value); built by :mod:`nlgbias.report.paper_tables`: shares in percent, gaps in
    percentage points, CIs as ``[low, high]``, a significance mark after each difference from
    its Benjamini-Hochberg adjusted p (:data:`MARKS`), a small-n mark, the MDE, the legend under
    the table.  LaTeX (:mod:`nlgbias.report.latex`): booktabs, a ``tabularx`` float or a
    ``longtable`` sized to the text width, plus ``tables.tex``, an article that inputs them all.
    Every piece of text is escaped for its format (group names come from user YAML, model names
    from the command line).
``svg``, ``png``
    ``charts/<name>.svg|png``: each chart of the report as a standalone file with the report's
    look (the same SVG, plus its namespace, the report's text styles and a white background).
    PNG needs the optional ``resvg-py`` package (:data:`PNG_INSTALL`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable, Sequence

import pandas as pd
from markupsafe import Markup, escape

from nlgbias.errors import InputError, option
from nlgbias.metrics.results import Results
from nlgbias.report.folder import read_run_folder
from nlgbias.report.html import Section, _environment
from nlgbias.report.latex import document, latex, latex_escape
from nlgbias.report.latex import legend as latex_legend
from nlgbias.report.paper_tables import (ALL_ROWS, MARKS, RowFilter, Table, gap_difference_table, gap_table, models_table,
                                         share_table, significance_mark, tables)
from nlgbias.report.svg import chart_css
from nlgbias.store.export import write_bytes, write_text

FORMATS = ("latex", "markdown", "svg", "png")
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


# -- tables (built in nlgbias.report.paper_tables, LaTeX in nlgbias.report.latex) ---------------

def _legend(fmt: str) -> str:
    """What the significance marks mean, in ``latex`` or plain text."""
    if fmt == "latex":
        return latex_legend()
    return ", ".join(f"{mark} adjusted p < {level:g}" for level, mark in reversed(MARKS))


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


# -- the run folder ---------------------------------------------------------------------------

LATEX_DOCUMENT = "tables.tex"  # an article that \input's every exported table (compile it to check the layout)


def export_results(results: Results, samples: pd.DataFrame, manifest: dict, out: str | Path,
                   formats: Iterable[str], *, sections: Sequence[Section], rows_of: RowFilter = ALL_ROWS) -> list[Path]:
    """Write the exports of one analysis (a run, or one part of a report over several runs) to ``out``.

    ``formats``: any of :data:`FORMATS`; ``sections``: the report's sections, whose charts the ``svg``
    and ``png`` formats write; ``rows_of``: the rows the tables keep (charts show everything; checked
    by the callers, :func:`export_run` and :func:`export_combined`).  LaTeX also writes
    :data:`LATEX_DOCUMENT`, an article that inputs every table.
    """
    formats = export_formats(formats)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    writers = {"latex": (".tex", latex), "markdown": (".md", markdown)}
    for fmt in (f for f in formats if f in writers):
        suffix, render = writers[fmt]
        exported = tables(results, manifest, rows_of=rows_of)
        for table in exported:
            written.append(write_text(out / f"{table.name}{suffix}", render(table)))
        if fmt == "latex":
            written.append(write_text(out / LATEX_DOCUMENT, document([t.name for t in exported])))
    if "svg" in formats or "png" in formats:
        (out / "charts").mkdir(exist_ok=True)
        for stem, svg in charts(results, samples, manifest, sections):
            if "svg" in formats:
                written.append(write_text(out / "charts" / f"{stem}.svg", svg))
            if "png" in formats:
                written.append(write_bytes(out / "charts" / f"{stem}.png", png_bytes(svg)))
    return written


def export_run(folder: str | Path, formats: Iterable[str], *, sections: Sequence[Section],
               rows_of: RowFilter = ALL_ROWS) -> list[Path]:
    """Write the exports of the run in ``folder`` to ``folder/export/``; return the files written.

    ``formats``: any of :data:`FORMATS` (each may be a comma list, as on the command line);
    ``sections``: the report's sections, whose charts the ``svg`` and ``png`` formats write.
    """
    formats = export_formats(formats)
    folder = Path(folder)
    results, samples, manifest = read_run_folder(folder)
    rows_of.check(results)
    return export_results(results, samples, manifest, folder / EXPORT_FOLDER, formats, sections=sections,
                          rows_of=rows_of)


def export_combined(combined, out: str | Path, formats: Iterable[str], *, sections: Sequence[Section],
                    rows_of: RowFilter = ALL_ROWS) -> list[Path]:
    """Write the exports of a report over several runs (a :class:`nlgbias.pipeline.combine.Combined`
    written to ``out``): to ``out/export/`` for one part, to ``out/part-N/export/`` for each of several."""
    formats = export_formats(formats)
    rows_of.check(*(part.results for part in combined.parts))  # before anything is written
    written = []
    for number, part in enumerate(combined.parts, start=1):
        folder = Path(out) if len(combined.parts) == 1 else Path(out) / f"part-{number}"
        written += export_results(part.results, part.samples, part.manifest, folder / EXPORT_FOLDER, formats,
                                  sections=sections, rows_of=rows_of)
    return written


__all__ = ["EXPORT_FOLDER", "FORMATS", "LATEX_DOCUMENT", "MARKS", "RowFilter", "Table", "charts", "export_combined",
           "export_formats", "export_results", "export_run", "gap_difference_table", "gap_table", "latex",
           "latex_escape", "markdown", "markdown_escape", "models_table", "png_bytes", "share_table",
           "significance_mark", "standalone_svg", "tables"]
