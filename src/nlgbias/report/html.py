"""Render a run's Results, samples and manifest into one self-contained HTML file.

The page needs no network (inline CSS and SVG, no scripts from a CDN) and escapes every
piece of text: generations are untrusted model output, and group names come from user YAML.

The report knows no analysis by name: the caller passes the :class:`Section` of each analysis
(:func:`nlgbias.analyses.report_sections`), each a context function and its template.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import jinja2
import pandas as pd
from markupsafe import escape

from nlgbias.metrics.results import Results
from nlgbias.report.sections import SIGNIFICANCE, ci_label, format_p
from nlgbias.report.svg import chart_css
from nlgbias.resources import package_path
from nlgbias.store.export import write_text
from nlgbias.store.manifest import SETTINGS

EXAMPLES_PER_CELL = 3


@dataclass(frozen=True)
class Section:
    """One analysis's part of the report.

    ``name``: the analysis, and the name of the template's context.  ``context(results, samples,
    manifest) -> dict | None``: the numbers, rows and charts the template shows (``None``: the run
    has no such tables, and the template shows nothing).  ``template``: a file name under
    ``nlgbias/report/templates`` or the path of a Jinja template (autoescaped).
    """

    name: str
    context: Callable[[Results, pd.DataFrame, dict], dict | None]
    template: str | Path


def _environment(extra_folders: Sequence[str] = ()) -> jinja2.Environment:
    folders = [str(package_path("report", "templates")), *extra_folders]
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(folders), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["pct"] = lambda v, digits=1: "–" if v is None or pd.isna(v) else f"{100 * v:.{digits}f}%"
    env.filters["pts"] = lambda v: "–" if v is None or pd.isna(v) else f"{100 * v:+.1f}"
    env.filters["pval"] = format_p
    env.filters["mde"] = lambda v: "none" if v is None or pd.isna(v) else f"{100 * v:.1f}"
    env.filters["pts_plain"] = lambda v: "–" if v is None or pd.isna(v) else f"{v:.2f}"
    env.filters["num"] = lambda v, spec="%.3f": "–" if v is None or pd.isna(v) else spec % v  # None/NaN: "–"
    return env


def render_report(results: Results, samples: pd.DataFrame, manifest: dict, *, sections: Sequence[Section],
                  title: str | None = None, runs: dict | None = None) -> str:
    """The report as an HTML string.

    Parameters
    ----------
    results : Results
        The run's metric tables.
    samples : pandas.DataFrame
        The samples table (for example generations per cell).
    manifest : dict
        The run manifest (shown at the end).
    sections : sequence of Section
        The analyses' sections, in the order they are shown (a section whose context is ``None``
        shows nothing).
    title : str, optional
        The heading (default: "nlgbias report: <suite>").
    runs : dict, optional
        A report over several runs: the settings table of :func:`runs_context`, shown first.
    """
    scorers = [s["name"] for s in manifest.get("scorers", [])]
    templates = [Path(s.template) for s in sections]
    context = {
        "manifest": manifest,
        "meta": results.meta,
        **{s.name: s.context(results, samples, manifest) for s in sections},
        "section_templates": [t.name for t in templates],
        "examples": _examples(samples, scorers) if {"model", "context", "group", "sentence"} <= set(samples.columns) else [],
        "scorers": scorers,
        "alpha": SIGNIFICANCE,
        "title": title,
        "ci_label": ci_label(results),
        "runs": runs,
        "chart_css": chart_css("svg "),
        # The output hashes are added to manifest.json after the report is written (the report is one
        # of the hashed files), so the page shows the manifest without them: a re-render is identical.
        "manifest_json": json.dumps({k: v for k, v in manifest.items() if k != "output_sha256"}, indent=2,
                                    ensure_ascii=False),
    }
    extra = sorted({str(t.parent) for t in templates if t.is_absolute()})
    return _environment(extra).get_template("report.html.j2").render(**context)


def _examples(samples: pd.DataFrame, scorers: list[str]) -> list[dict]:
    """A few generations per (model, context, group): the lowest sample indices, one per template first."""
    cells = []
    for (model, context_name, group), cell in samples.groupby(["model", "context", "group"], sort=False):
        picked = cell.sort_values(["sample_idx", "template_id"], kind="stable").head(EXAMPLES_PER_CELL)
        cells.append({
            "model": model, "context": context_name, "group": group, "n": int(len(cell)),
            "rows": [{"sentence": row["sentence"],
                      "rest": (row["prompt"] + row["continuation"])[len(row["sentence"]):].strip(),
                      "labels": {s: _label(row, s) for s in scorers}} for _, row in picked.iterrows()],
        })
    return cells


def _label(row: pd.Series, scorer: str):
    """A sample's label for the examples table; occupation lists are shown in full."""
    if scorer == "occupation" and isinstance(row.get("occupation_details"), str):
        titles = json.loads(row["occupation_details"]).get("occupations", [])
        return ", ".join(titles) if titles else "none"
    return row.get(f"{scorer}_label")


def write_report(path: str | Path, results: Results, samples: pd.DataFrame, manifest: dict, *,
                 sections: Sequence[Section]) -> Path:
    """Render (:func:`render_report`) and write the report atomically."""
    return write_text(Path(path), render_report(results, samples, manifest, sections=sections))


RUNS_RULE = ("Runs with the same suite, decoding, seed, scorer versions and statistics settings are analysed "
             "together, as one run with all their models, whatever their samples per prompt (each comparison uses "
             "its own cells' n); runs whose other settings differ are never pooled: "
             "each part below is its own analysis, with its own comparisons and adjustment.")


def runs_context(runs: pd.DataFrame, settings: Sequence[str]) -> dict:
    """The settings table of a report over several runs: one column per run, one row per setting."""
    rows = runs.astype(object).where(runs.notna(), "–").to_dict(orient="records")
    shown = ["run_id", "part", "models", *settings]
    differ = [name for name in shown if name not in ("run_id", "models") and len({str(r[name]) for r in rows}) > 1]
    return {"rows": rows, "settings": shown, "differ": differ, "rule": RUNS_RULE}


def render_runs_report(combined, *, sections: Sequence[Section]) -> str:
    """One HTML page over several runs (a :class:`nlgbias.pipeline.combine.Combined`): with one part, that part's
    report with the runs table first; with several, a heading and the runs table, then each part's
    report body under its own heading."""
    runs = runs_context(combined.runs, SETTINGS)
    parts = combined.parts
    if len(parts) == 1:
        part = parts[0]
        return render_report(part.results, part.samples, part.manifest, sections=sections, runs=runs,
                             title=combined.title or f"nlgbias report: {part.manifest['suite']['name']}, "
                                                     f"{len(part.folders)} runs")
    pages = [render_report(p.results, p.samples, p.manifest, sections=sections,
                           title=f"Part {i}: {p.manifest['suite']['name']} · "
                                 f"{', '.join(m['model'] for m in p.manifest['models'])}")
             for i, p in enumerate(parts, start=1)]
    title = combined.title or f"nlgbias report: {len(combined.runs)} runs in {len(parts)} parts"
    # Every page comes from report.html.j2, whose text is escaped: "<body>" and "</body>" occur once each.
    head = pages[0].split("<body>", 1)[0]
    head = head.split("<title>", 1)[0] + "<title>" + str(escape(title)) + "</title>" + head.split("</title>", 1)[1]
    top = _environment().get_template("_runs.html.j2").render(runs=runs)
    bodies = [page.split("<body>", 1)[1].rsplit("</body>", 1)[0] for page in pages]
    return f"{head}<body>\n<h1>{escape(title)}</h1>\n{top}{''.join(bodies)}</body>\n</html>\n"


def write_runs_report(path: str | Path, combined, *, sections: Sequence[Section]) -> Path:
    """Render and write the report over several runs atomically."""
    return write_text(Path(path), render_runs_report(combined, sections=sections))
