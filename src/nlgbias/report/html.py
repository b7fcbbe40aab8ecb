"""Render a run's Results, samples and manifest into one self-contained HTML file.

The page needs no network (inline CSS and SVG, no scripts from a CDN) and escapes every
piece of text: generations are untrusted model output, and group names come from user YAML.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import jinja2
import pandas as pd

from nlgbias.metrics.results import Results
from nlgbias.report.charts import stacked_panels
from nlgbias.store.export import write_text

EXAMPLES_PER_CELL = 3
SIGNIFICANCE = 0.05


def _environment() -> jinja2.Environment:
    folder = str(resources.files("nlgbias.report").joinpath("templates"))
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
    labels = list(results.meta.get("labels", ["negative", "neutral", "positive"]))
    scorers = [s["name"] for s in manifest.get("scorers", [])]
    gaps = results.gaps
    findings = gaps[gaps["p_adj"] < SIGNIFICANCE].assign(size=lambda t: t["diff"].abs()) \
        .sort_values("size", ascending=False).head(12)
    context = {
        "manifest": manifest,
        "meta": results.meta,
        "labels": labels,
        "panels": stacked_panels(results.shares, labels, scorers),
        "gaps": gaps.to_dict(orient="records"),
        "model_gaps": results.model_gaps.to_dict(orient="records"),
        "findings": findings.to_dict(orient="records"),
        "small_cells": int(results.shares.drop_duplicates(["model", "context", "scorer", "group"])["small_n"].sum()),
        "examples": _examples(samples, scorers),
        "scorers": scorers,
        "alpha": SIGNIFICANCE,
        "manifest_json": json.dumps(manifest, indent=2, ensure_ascii=False),
    }
    return _environment().get_template("report.html.j2").render(**context)


def _examples(samples: pd.DataFrame, scorers: list[str]) -> list[dict]:
    """A few generations per (model, context, group): the lowest sample indices, one per template first."""
    cells = []
    for (model, context_name, group), cell in samples.groupby(["model", "context", "group"], sort=False):
        picked = cell.sort_values(["sample_idx", "template_id"], kind="stable").head(EXAMPLES_PER_CELL)
        cells.append({
            "model": model, "context": context_name, "group": group, "n": int(len(cell)),
            "rows": [{"sentence": row["sentence"],
                      "rest": (row["prompt"] + row["continuation"])[len(row["sentence"]):].strip(),
                      "labels": {s: row.get(f"{s}_label") for s in scorers}} for _, row in picked.iterrows()],
        })
    return cells


def write_report(path: str | Path, results: Results, samples: pd.DataFrame, manifest: dict) -> Path:
    """Render and write the report atomically."""
    return write_text(Path(path), render_report(results, samples, manifest))
