"""Report sections of the built-in analyses: shares, gap differences, occupations, gender direction,
regard validity (the pronoun probe's section lives with the probe, :mod:`nlgbias.probes.pronouns.section`).

Each function takes a run's :class:`~nlgbias.metrics.results.Results`, its samples table and
its manifest, and returns the template context of its section (numbers, row dicts and
``Markup`` SVG charts from :mod:`.svg`), or ``None`` when the run has no such tables.  The
analysis registry (:mod:`nlgbias.analyses`) pairs each with its template.
:func:`records` turns a table into the row dicts a template iterates over.
"""

from __future__ import annotations

import math
from typing import Any, cast

import pandas as pd

from nlgbias.annotation.sample import hard_examples
from nlgbias.defaults import CONFIDENCE
from nlgbias.metrics.power import FDR, MDE_FLAG
from nlgbias.metrics.results import Results
from nlgbias.metrics.validity import THRESHOLD
from nlgbias.report.findings import family_counts, family_tables, few_prompts, precision_line, top_findings
from nlgbias.report.charts import ALONE_BAR_WIDTH, stacked_panels
from nlgbias.report.svg import bar_chart, line_chart, scatter
from nlgbias.scorers.regard import ANNOTATED, RELEASE, measured_validity

SIGNIFICANCE = FDR
TOP_JOBS = 8
SPLIT_JOBS = 30


def ci_label(results: Results) -> str:
    """``"95% CI"``, or the run's own level: what the report calls its confidence intervals."""
    return f"{float(results.meta.get('confidence', CONFIDENCE)):.0%} CI"


def format_p(value) -> str:
    """A p-value as the report and the exports print it: ``<0.001``, three decimals, or ``–`` if missing.

    >>> [format_p(v) for v in (0.0004, 0.0123, None, float("nan"))]
    ['<0.001', '0.012', '–', '–']
    """
    if value is None or pd.isna(value):
        return "–"
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def records(table: pd.DataFrame) -> list[dict]:
    """The rows of ``table`` as dicts (an empty list for an empty table)."""
    return table.to_dict(orient="records") if not table.empty else []


def shares(results: Results, _samples: pd.DataFrame, manifest: dict) -> dict | None:
    """Label shares, key findings and gap tables (Sheng et al.), or None without them."""
    if results.shares.empty:
        return None
    scorers = [s["name"] for s in manifest.get("scorers", [])]
    labels = list(results.meta.get("labels", ["negative", "neutral", "positive"]))
    gaps = results.gaps
    family = list(family_tables(results).values())  # every comparison of the run's BH family
    return {
        "labels": labels,
        "panels": stacked_panels(results.shares, labels, scorers, ci=ci_label(results), alone=ALONE_BAR_WIDTH),
        "gaps": gaps.to_dict(orient="records"),
        "model_gaps": results.model_gaps.to_dict(orient="records"),
        "findings": top_findings(results, alpha=SIGNIFICANCE),
        "counts": family_counts(results, alpha=SIGNIFICANCE),
        "precision": precision_line(manifest),
        "few_prompts": few_prompts(results),
        "unit": results.meta.get("unit", "sample"),
        "has_units": "units_a" in gaps,
        "design": design_summary(results.shares),
        "small_cells": int(results.shares.drop_duplicates(["model", "context", "scorer", "group"])["small_n"].sum()),
        "mde": low_power(pd.concat(family, ignore_index=True)) if family else None,
        "mde_flag": MDE_FLAG,
    }


def design_summary(shares: pd.DataFrame) -> dict | None:
    """How much the prompts shrink the samples: the cells' prompts (fewest, most), their design
    effects (median, largest) and effective n as a share of n; None at sample level or for a run
    written before the columns."""
    if "deff" not in shares or not (shares["deff"] > 1).any():
        return None
    cells = shares.dropna(subset=["deff", "n_units"])
    return {"units_low": int(cells["n_units"].min()), "units_high": int(cells["n_units"].max()),
            "deff_median": float(cells["deff"].median()), "deff_max": float(cells["deff"].max()),
            "icc_median": float(cells["icc"].median()) if cells["icc"].notna().any() else None,
            "kept": float(cells["n_eff"].sum() / cells["n"].sum())}


def gap_differences(results: Results, _samples: pd.DataFrame, _manifest: dict) -> dict | None:
    """Each group gap in one model minus the same gap in another, or None for a run with one model."""
    table = results.table("gap_differences")
    if table.empty:
        return None
    significant = table[table["p_adj"] < SIGNIFICANCE]
    return {"rows": records(table), "n_significant": int(len(significant)),
            "meta": results.meta.get("gap_differences", {}), "mde": low_power(table), "mde_flag": MDE_FLAG}


def low_power(gaps: pd.DataFrame) -> dict | None:
    """The comparisons without a significant gap whose MDE exceeds :data:`MDE_FLAG` (or that can see
    no gap at all): ``n`` of ``of``, their MDE range in points and ``none`` (no gap visible);
    ``None`` for a run written before the ``mde`` column."""
    if "mde" not in gaps:
        return None
    quiet = gaps[~(gaps["p_adj"] < SIGNIFICANCE)]
    weak = quiet[~(quiet["mde"] <= MDE_FLAG)]
    finite = weak["mde"].dropna()
    return {"n": int(len(weak)), "of": int(len(quiet)), "none": int(weak["mde"].isna().sum()),
            "low": float(100 * finite.min()) if len(finite) else None,
            "high": float(100 * finite.max()) if len(finite) else None}


def occupations(results: Results, _samples: pd.DataFrame, _manifest: dict) -> dict | None:
    """Kirk et al. (2021): titles, diversity, gender splits, regressions, US labour comparison."""
    calls = results.table("occupation_calls")
    if calls.empty:
        return None
    models = list(dict.fromkeys(calls["model"]))
    no_title = (calls.groupby(["model", "axis"], sort=False)[["n_calls", "n_titled"]].sum().reset_index()
                .assign(no_title_share=lambda t: 1 - t["n_titled"] / t["n_calls"]))
    rank = results.table("occupation_rank_frequency")
    curves = []
    for model in models:
        part = rank[rank["model"] == model]
        series = {f"{g} · {a}": list(zip(cell["rank"], cell["share"]))
                  for (g, a), cell in part.groupby(["gender", "axis"], sort=False)}
        curves.append(line_chart(series, title=f"{model}: share of mentions by rank", x_label="rank (log scale)",
                                 y_label="share", log_x=True))
    gini = results.table("occupation_gini")
    gini_charts = [bar_chart([{"label": f"{r['gender']} · {r['axis']}", "value": r["gini"], "ci_low": r["ci_low"],
                               "ci_high": r["ci_high"]} for r in records(gini[gini["model"] == m])],
                             title=f"{m}: Gini coefficient of titles ({ci_label(results)})", low=0.0, high=1.0) for m in models]
    counts = results.table("occupation_counts")
    top = []
    for (model, group), cell in counts.groupby(["model", "group"], sort=False):
        total = calls[(calls["model"] == model) & (calls["group"] == group)]["n_calls"].sum()
        best = cell.sort_values(["k", "occupation"], ascending=[False, True]).head(5)
        top.append({"model": model, "group": group, "n_calls": int(total),
                    "jobs": ", ".join(f"{o} ({k / total:.0%})" for o, k in zip(best["occupation"], best["k"]))})
    split = results.table("occupation_gender_split")
    split_charts = []
    for model in models if not split.empty else []:
        part = split[split["model"] == model].sort_values("k", ascending=False).head(SPLIT_JOBS)
        part = part.sort_values("share_woman", ascending=False)
        if not part.empty:
            split_charts.append(bar_chart([{"label": f"{r['occupation']} (n={int(r['k'])})", "value": r["share_woman"]}
                                           for r in records(part)],
                                          title=f"{model}: share of each job's mentions from woman prompts (base)",
                                          value_format="{:.0%}", low=0.0, high=1.0, reference=0.5))
    comparison = results.table("labor_comparison")
    scatters = []
    for model in models:
        part = comparison[comparison["model"] == model] if not comparison.empty else comparison
        if not part.empty:
            points = [{"x": r["us_share"], "y": r["adj_pred"], "label": f"{r['unit']} · {r['ethnicity']} {r['gender']}",
                       "series": f"{r['ethnicity']} {r['gender']}"} for r in records(part)
                      if not (math.isnan(r["us_share"]) or math.isnan(r["adj_pred"]))]
            scatters.append(scatter(points, title=f"{model}: model (adjusted) vs US share", x_label="US share of workers",
                                    y_label="model share (adjusted)", limit=1.0))
    regressions = results.table("occupation_regression_summary")
    fitted = regressions[regressions["n_ok"] > 0] if "n_ok" in regressions else regressions
    return {
        "no_title": records(no_title), "curves": curves, "gini": records(gini[gini["n_mentions"] > 0])
        if "n_mentions" in gini else records(gini), "gini_charts": gini_charts,
        "no_jobs": _cells_without_jobs(gini),
        "coverage": _coverage(results.table("occupation_coverage")), "top": top, "split_charts": split_charts,
        "regressions": records(fitted),
        "unestimable": _unestimable(regressions, results.table("occupation_regression_excluded")),
        "excluded": records(results.table("occupation_regression_excluded")),
        "labor_agreement": records(results.table("labor_agreement")),
        "labor_segregation": records(results.table("labor_segregation")),
        "labor_top": records(results.table("labor_top_jobs")),
        "labor_coverage": _labor_coverage(results.table("labor_coverage")),
        "scatters": scatters, "meta": results.meta.get("occupations", {}),
    }


def _cells_without_jobs(gini: pd.DataFrame) -> list[str]:
    """``"model gender·axis"`` of every cell whose samples name no job (no Gini, no coverage)."""
    if gini.empty or "n_mentions" not in gini:
        return []
    empty = gini[gini["n_mentions"] == 0]
    return [f"{m} {g}·{a}" for m, g, a in zip(empty["model"], empty["gender"], empty["axis"])]


def _coverage(table: pd.DataFrame) -> list[dict]:
    """One entry per cell with mentions: ``model, cell, n_jobs, needed`` (``[(level %, jobs), ...]``)."""
    if table.empty or "jobs_needed" not in table:
        return []
    out = []
    for (model, gender, axis), cell in table[table["n_mentions"] > 0].groupby(["model", "gender", "axis"],
                                                                              sort=False):
        out.append({"model": model, "cell": f"{gender}·{axis}", "n_jobs": int(cell["n_jobs"].iloc[0]),
                    "needed": [(f"{100 * level:.0f}%", int(k)) for level, k in zip(cell["level"], cell["jobs_needed"])]})
    return out


def _unestimable(summary: pd.DataFrame, excluded: pd.DataFrame) -> dict | None:
    """The regression rows with no fitted job, collapsed: how many terms, of which axes, and why
    the fits were excluded (status counts); None when every row has a fit."""
    if summary.empty or "n_ok" not in summary:
        return None
    none = summary[summary["n_ok"] == 0]
    if none.empty:
        return None
    reasons = (excluded.groupby("status")["n_jobs"].sum().sort_values(ascending=False)
               if not excluded.empty and {"status", "n_jobs"} <= set(excluded.columns) else pd.Series(dtype=int))
    return {"terms": int(len(none)), "of": int(len(summary)),
            "axes": ", ".join(dict.fromkeys(f"{m} {a}" for m, a in zip(none["model"], none["axis"]))),
            "reasons": ", ".join(f"{status.replace('_', ' ')} {int(n)}" for status, n in reasons.items())}


def _labor_coverage(table: pd.DataFrame) -> list[dict]:
    if table.empty or "matched" not in table:
        return []
    out = table.groupby("model", sort=False).agg(n=("matched", "size"), matched=("matched", "sum")).reset_index()
    return records(out)


def gender_direction(results: Results, _samples: pd.DataFrame, _manifest: dict) -> dict | None:
    """Yeo & Chen: bias of generated professions along the gender direction, fairness check."""
    by_group = results.table("gender_bias_by_group")
    if by_group.empty:
        return None
    charts = []
    for model, part in by_group.groupby("model", sort=False):
        rows = [{"label": f"{r['template_id']} · {r['gender']}", "value": r["mean_bias"], "ci_low": r["ci_low"],
                 "ci_high": r["ci_high"], "series": r["gender"]} for r in records(part)]
        charts.append(bar_chart(rows, title=f"{model}: mean gender bias w·g of the generated profession ({ci_label(results)})",
                                value_format="{:+.3f}"))
    return {"charts": charts, "difference": records(results.table("gender_bias_difference")),
            "spaces": records(results.table("gender_bias_spaces")),
            "sanity": records(results.table("gender_direction_sanity")),
            "pairs": records(results.table("fairness_pairs")),
            "lipschitz": records(results.table("fairness_lipschitz")),
            "missing": records(results.table("gender_bias_missing").head(20)),
            "meta": results.meta.get("gender_direction", {})}


def own_classifier(classifier) -> dict | None:
    """The validity panel's facts about a classifier of the user's (``--scorer regard:DIR``): the
    manifest's ``classifier`` record (path, adapter hash and the figures its ``config.json`` held),
    with every figure the panel shows present, ``None`` where the folder did not record it or
    recorded something that is not such a figure (a copy of a shipped classifier has no
    ``n_own_test``; a hand-made folder may have no evaluation at all); ``yours``: the training items
    of the user's.  ``None`` when the run used no classifier of the user's."""

    if not classifier or not isinstance(classifier, dict):
        return None

    def figure(key: str, kind: type | tuple = (int, float), *, share: bool = False) -> Any:
        value = classifier.get(key)
        if isinstance(value, bool) or not isinstance(value, kind):
            return None
        number = cast(float, value)
        if not math.isfinite(number):
            return None
        return value if not share or 0 <= number <= 1 else None

    extra = classifier.get("extra_items")
    extra = extra if isinstance(extra, list) else []
    return {"path": str(classifier.get("path", "")), "adapter_sha256": str(classifier.get("adapter_sha256", "")),
            "train_items": figure("train_items", int),
            "yours": sum(e["train"] for e in extra if isinstance(e, dict) and type(e.get("train")) is int),
            "test_accuracy": figure("test_accuracy", share=True), "n_own_test": figure("n_own_test", int),
            "own_test_accuracy": figure("own_test_accuracy", share=True),
            "shipped_own_test_accuracy": figure("shipped_own_test_accuracy", share=True)}


def regard_validity(results: Results, samples: pd.DataFrame, manifest: dict) -> dict | None:
    """How far the run's regard numbers can be trusted: the classifier's version and its measured
    generalization (per kind of held-out text: range of accuracy and negative recall), low-confidence
    shares per group, flagged gaps between groups, hard examples."""
    shares = results.table("regard_confidence")
    if shares.empty:
        return None
    gaps = results.table("regard_confidence_gaps")
    entry: dict = next((s for s in manifest.get("scorers", []) if s.get("name") == "regard"), {})
    version = entry.get("version")
    classifier = entry.get("classifier")  # a classifier of the user's (--scorer regard:DIR)
    head = (version or "").split("+")[0]  # "regard-2+<adapter hash>[+backend]"
    releases = {f"regard-{r}": r for r in ANNOTATED}  # every shipped release; another version: the default
    release = releases.get(head, RELEASE)
    measured = measured_validity(release)
    held_out = [{"by": by, "kinds": len(rows), "n": sum(r["n"] for r in rows), "names": ", ".join(r["held_out"] for r in rows),
                 "accuracy": (min(r["accuracy"] for r in rows), max(r["accuracy"] for r in rows)),
                 "negative_recall": (min(r["negative_recall"] for r in rows), max(r["negative_recall"] for r in rows))}
                for by in dict.fromkeys(r["by"] for r in measured["held_out"])
                for rows in [[r for r in measured["held_out"] if r["by"] == by]]]
    flagged = gaps[gaps["flagged"]] if "flagged" in gaps else gaps.iloc[0:0]
    examples = hard_examples(samples, k=2) if "regard_details" in samples else pd.DataFrame()
    return {
        "version": version,
        "release": release,
        "classifier": own_classifier(classifier),
        "threshold": THRESHOLD,
        "held_out": held_out,
        "own_test_accuracy": measured["own_test_accuracy"],
        "checklist": measured["checklist"],
        "shares": records(shares),
        "flagged": records(flagged),
        "examples": records(examples[["model", "context", "group", "scored_text", "label", "p_max"]])
        if not examples.empty else [],
    }
