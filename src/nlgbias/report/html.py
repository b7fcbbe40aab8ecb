"""Render a run's Results, samples and manifest into one self-contained HTML file.

The page needs no network (inline CSS and SVG, no scripts from a CDN) and escapes every
piece of text: generations are untrusted model output, and group names come from user YAML.
"""

from __future__ import annotations

import json
from pathlib import Path

import jinja2
import pandas as pd

from nlgbias.metrics.results import Results
from nlgbias.report import sections
from nlgbias.report.charts import stacked_panels
from nlgbias.resources import package_path
from nlgbias.store.export import write_text

EXAMPLES_PER_CELL = 3
SIGNIFICANCE = 0.05


def _environment() -> jinja2.Environment:
    folder = str(package_path("report", "templates"))
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(folder), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["pct"] = lambda v, digits=1: "–" if v is None or pd.isna(v) else f"{100 * v:.{digits}f}%"
    env.filters["pts"] = lambda v: "–" if v is None or pd.isna(v) else f"{100 * v:+.1f}"
    env.filters["pval"] = _format_p
    return env


def _format_p(value) -> str:
    if value is None or pd.isna(value):
        return "–"
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def render_report(results: Results, samples: pd.DataFrame, manifest: dict) -> str:
    """The report as an HTML string.

    Parameters
    ----------
    results : Results
        Shares, gaps and model gaps of the run.
    samples : pandas.DataFrame
        The samples table (for example generations per cell).
    manifest : dict
        The run manifest (shown at the end).
    """
    scorers = [s["name"] for s in manifest.get("scorers", [])]
    context = {
        "manifest": manifest,
        "meta": results.meta,
        "shares": _shares_section(results, scorers),
        "occupations": sections.occupations(results),
        "gender_direction": sections.gender_direction(results),
        "pronouns": sections.pronouns(results, samples),
        "examples": _examples(samples, scorers) if {"model", "context", "group", "sentence"} <= set(samples.columns) else [],
        "scorers": scorers,
        "alpha": SIGNIFICANCE,
        "manifest_json": json.dumps(manifest, indent=2, ensure_ascii=False),
    }
    return _environment().get_template("report.html.j2").render(**context)


def _shares_section(results: Results, scorers: list[str]) -> dict | None:
    """Label shares, key findings and gap tables (Sheng et al.), or None without them."""
    if results.shares.empty:
        return None
    labels = list(results.meta.get("labels", ["negative", "neutral", "positive"]))
    gaps = results.gaps
    findings = gaps[gaps["p_adj"] < SIGNIFICANCE].assign(size=lambda t: t["diff"].abs()) \
        .sort_values("size", ascending=False).head(12)
    return {
        "labels": labels,
        "panels": stacked_panels(results.shares, labels, scorers),
        "gaps": gaps.to_dict(orient="records"),
        "model_gaps": results.model_gaps.to_dict(orient="records"),
        "findings": findings.to_dict(orient="records"),
        "small_cells": int(results.shares.drop_duplicates(["model", "context", "scorer", "group"])["small_n"].sum()),
    }


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


def write_report(path: str | Path, results: Results, samples: pd.DataFrame, manifest: dict) -> Path:
    """Render and write the report atomically."""
    return write_text(Path(path), render_report(results, samples, manifest))
