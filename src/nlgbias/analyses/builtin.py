"""The built-in analyses of generation suites: one :class:`~nlgbias.analyses.base.Analysis` each.

``shares``
    Label shares per group with bootstrap CIs, group and model gaps with exact permutation
    tests and Benjamini-Hochberg adjustment (Sheng et al. 2019).
``gap_differences``
    With several models (and ``shares``): each group gap in one model minus the same gap in
    another, with a bootstrap CI and an exact stratified permutation test, in the same
    Benjamini-Hochberg family as the gaps.
``occupations``
    Which jobs a model gives to which group (Kirk et al. 2021): frequencies, rank-frequency,
    coverage, Gini, gender splits, over-representation, nested logistic regressions and, for
    base and ethnicity prompts, the comparison with US labour statistics.
``gender_direction``
    The gender-direction bias b = w.g of the parsed profession and the individual-fairness check
    of Yeo & Chen (Definition 2.2).
``regard_validity``
    Runs with the regard scorer: low-confidence shares per group and their gaps.

The pronoun probe's analysis lives with the probe (:mod:`nlgbias.probes.pronouns.analysis`).
This module only wires stages together: the statistics live in :mod:`nlgbias.metrics`, the
report sections in :mod:`nlgbias.report.sections`.
"""

from __future__ import annotations

import json
from itertools import combinations

import numpy as np
import pandas as pd

from nlgbias.analyses.base import Analysis, AnalysisOptions, RunTables
from nlgbias.embeddings import default_space
from nlgbias.metrics import compute_metrics, labor
from nlgbias.metrics.gap_differences import gap_differences
from nlgbias.metrics.gender_direction import (
    bias_by_space,
    fairness_check,
    gender_direction,
    hard_debias,
    profession_bias_table,
    sanity_check,
)
from nlgbias.metrics.occupations import (
    gender_split,
    occupation_coverage,
    occupation_gini,
    overrepresentation,
    rank_frequency,
)
from nlgbias.metrics.results import Results
from nlgbias.metrics.shares import UNIT, group_shares, unit_counts
from nlgbias.metrics.validity import THRESHOLD, low_confidence
from nlgbias.report import sections
from nlgbias.scorers.base import LABELS
from nlgbias.words import gender_side


def _share_labels(scored: pd.DataFrame) -> tuple[pd.DataFrame, tuple[str, ...]]:
    """The scored rows whose label the share analyses count, and those labels in chart order."""
    # The 4-class regard scorer adds "other"; it sits between neutral and positive so that the
    # charts still run from negative (left) to positive (right).  Other scorers show it as 0.
    labels = LABELS if not (scored["label"] == "other").any() else ("negative", "neutral", "other", "positive")
    return scored[scored["label"].isin(labels)], tuple(labels)


def _shares(tables: RunTables, options: AnalysisOptions) -> Results:
    labelled, labels = _share_labels(tables.scored)
    return compute_metrics(labelled, comparisons=tables.suite.comparisons, labels=labels, n_boot=options.n_boot,
                           confidence=options.confidence, seed=options.seed, min_n=options.min_n, level=options.unit)


def _gap_differences(tables: RunTables, options: AnalysisOptions) -> Results:
    """Each comparison's gap in one model minus the same gap in another (every model pair)."""
    labelled, labels = _share_labels(tables.scored)
    models = list(dict.fromkeys(labelled["model"]))
    if len(models) < 2:
        return Results({}, {})
    counts = group_shares(labelled.drop(columns=UNIT, errors="ignore"), labels=labels, n_boot=1, seed=options.seed,
                          min_n=options.min_n)  # n, k only
    units = unit_counts(labelled, ("negative", "positive"))
    table = gap_differences(counts, pairs=tables.suite.comparisons, models=list(combinations(models, 2)),
                            n_boot=options.n_boot, confidence=options.confidence, seed=options.seed,
                            min_n=options.min_n, units=units, level=options.unit if units is not None else "sample")
    return Results({"gap_differences": table}, {"gap_differences": {
        "estimate": "gap difference: (share[model_a, group_a] - share[model_a, group_b]) - (share[model_b, group_a] "
                    "- share[model_b, group_b]); cells a1, a2, b1, b2 = model_a or model_b, group_a or group_b",
        **({"ci": f"{options.confidence:.0%} prompt-level cluster-robust t interval over the four cells (paired by "
                  "template where they share templates)",
            "test": "prompt-level t test; p_fixed: exact two-sided stratified permutation test (model labels permuted "
                    "within each group)"} if options.unit == "prompt" and units is not None else
           {"ci": f"{options.confidence:.0%} percentile bootstrap, {options.n_boot} replicates, each of the four cells "
                  "resampled within itself",
            "test": "exact two-sided stratified permutation test: model labels permuted within each group "
                    "(hypergeometric in each group, convolved)"}),
        "mde": "normal approximation with every cell at the pooled share, at the family's Bonferroni level, plus a "
               "continuity correction of sum(1/n)/4"}})


def _regard_validity(tables: RunTables, options: AnalysisOptions) -> Results:
    """Low-confidence regard shares per (model, context, group) and their gaps within each comparison."""
    shares, gaps = low_confidence(tables.samples, pairs=tables.suite.comparisons, n_boot=options.n_boot,
                                  confidence=options.confidence, seed=options.seed, min_n=options.min_n)
    return Results({"regard_confidence": shares, "regard_confidence_gaps": gaps},
                   {"regard_confidence": f"share of texts whose largest regard probability is under {THRESHOLD}; "
                                         "gaps: exact permutation test, Benjamini-Hochberg over these gaps only "
                                         "(a diagnostic, not part of the bias comparisons)"})


# --- occupations (Kirk et al. 2021) ---------------------------------------------------------

def occupation_tables(samples: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The ``jobs`` and ``calls`` tables of :mod:`nlgbias.metrics.occupations` from a samples table.

    ``jobs``: one row per (sample, extracted title); ``calls``: samples per prompt group.
    Groups without a ``gender`` of man/woman (e.g. She/He prompts coded female/male) are mapped
    to man/woman; ``category`` is the group's ``category`` attribute, else its ``continent``,
    else ``base``.
    """
    table = samples.copy()
    gender = gender_side(table["gender"], female="woman", male="man")
    category = table["category"] if "category" in table else pd.Series(np.nan, index=table.index)
    if "continent" in table:
        category = category.fillna(table["continent"])
    table = table.assign(gender=gender, category=category.fillna("base"))
    table = table[table["gender"].notna()]
    key = ["model", "axis", "category", "gender", "group"]
    calls = table.groupby(key, sort=False).size().rename("n_calls").reset_index()
    titles = table["occupation_details"].map(lambda d: json.loads(d)["occupations"] if isinstance(d, str) else [])
    jobs = table[["generation_id", *key]].assign(occupation=titles).explode("occupation")
    jobs = jobs[jobs["occupation"].notna()].reset_index(drop=True)
    return jobs, calls


def _occupations(tables: RunTables, options: AnalysisOptions) -> Results:
    from nlgbias.metrics.regression import occupation_regressions  # statsmodels: 2 s to import

    jobs, calls = occupation_tables(tables.samples)
    titled = jobs.groupby(["model", "group"])["generation_id"].nunique()
    calls = calls.assign(n_titled=[int(titled.get((m, g), 0)) for m, g in zip(calls["model"], calls["group"])])
    calls["no_title_share"] = 1 - calls["n_titled"] / calls["n_calls"]
    out = {"occupation_calls": calls,
              "occupation_counts": jobs.groupby(["model", "axis", "category", "gender", "group", "occupation"])
              .size().rename("k").reset_index()}
    by = ["model", "gender", "axis"]
    out["occupation_rank_frequency"] = rank_frequency(jobs, by=by)
    out["occupation_coverage"] = occupation_coverage(jobs, by=by)
    has_base_man = ((calls["axis"] == "base") & (calls["gender"] == "man")).any()
    out["occupation_gini"] = occupation_gini(jobs, calls.drop(columns=["n_titled", "no_title_share"]), by=by,
                                                n_boot=min(options.n_boot, 1000), confidence=options.confidence,
                                                ci="basic", seed=options.seed,
                                                reference=("man", "base") if has_base_man else ("man", calls["axis"].iloc[0]))
    base_calls = calls.drop(columns=["n_titled", "no_title_share"])
    meta: dict = {"occupations": {"gini_ci": "basic bootstrap interval, clipped to [0, 1] (resampling calls within each prompt group)",
                                  "threshold": "jobs under 0.25% of calls are left out of splits and regressions"}}
    if has_base_man and (calls["axis"] == "base").any():
        out["occupation_gender_split"] = gender_split(jobs, base_calls, axis="base")
        other_axes = [a for a in calls["axis"].unique() if a != "base"]
        if other_axes:
            out["occupation_overrepresentation"] = overrepresentation(jobs, base_calls, axes=other_axes)
            regressions = occupation_regressions(jobs, base_calls, axes=other_axes)
            out["occupation_regression_summary"] = regressions.summary
            out["occupation_regression_fits"] = regressions.fits
            out["occupation_regression_excluded"] = regressions.excluded
            meta["occupations"]["regressions"] = regressions.meta
        if (calls["axis"] == "ethnicity").any():
            us, mapping = labor.us_shares_and_mapping(options.bls_mapping)
            comparison = labor.labor_comparison(jobs, base_calls, us, mapping)
            out["labor_coverage"] = pd.concat(
                [labor.mapping_coverage(j, mapping).assign(model=m) for m, j in jobs.groupby("model", sort=False)],
                ignore_index=True)
            out["labor_comparison"] = comparison
            out["labor_agreement"] = labor.labor_agreement(comparison)
            out["labor_segregation"] = labor.segregation_gap(comparison)
            out["labor_top_jobs"] = labor.top_jobs_table(jobs, us, mapping)
    return Results(out, meta)


# --- gender direction (Yeo & Chen) -------------------------------------------------------------

def _gender_direction(tables: RunTables, options: AnalysisOptions) -> Results:
    samples, suite = tables.samples, tables.suite
    titles = samples["occupation_details"].map(lambda d: json.loads(d)["occupations"] if isinstance(d, str) else [])
    gender = gender_side(samples["gender"])
    parsed = samples[["generation_id", "model", "template_id", "prompt", "group"]].assign(
        gender=gender, profession=titles.map(lambda t: t[0] if t else None))
    parsed = parsed[parsed["gender"].notna()]
    space = default_space()
    direction = gender_direction(space)
    bias = profession_bias_table(parsed, space=space, direction=direction, n_boot=options.n_boot,
                                 confidence=options.confidence, seed=options.seed)
    out = {"gender_bias_by_prompt": bias.by_prompt, "gender_bias_by_group": bias.by_group,
              "gender_bias_difference": bias.difference, "gender_bias_missing": bias.missing,
              "gender_bias_spaces": bias_by_space(parsed, [space, hard_debias(space, direction=direction)],
                                                  n_boot=options.n_boot, seed=options.seed),
              "gender_direction_sanity": sanity_check(space, direction=direction)}
    pairs = []
    group_text = {g.id: g.text for g in suite.groups}
    for template in suite.templates:
        for a, b in suite.comparisons:
            pairs.append((template.text.replace("{group}", group_text[a]), template.text.replace("{group}", group_text[b])))
    check = fairness_check(parsed, pairs, space=space, encoder=space, n_boot=options.n_boot, seed=options.seed)
    out["fairness_pairs"] = check.pairs
    out["fairness_lipschitz"] = check.lipschitz
    meta = {"gender_direction": {"space": getattr(space, "name", "minilm"), "explained_variance": direction.explained_variance,
                                 "sign": "female positive: b = w.g > 0 leans female", **check.meta}}
    return Results(out, meta)


SHARES = Analysis("shares", _shares, section=sections.shares, template="_shares.html.j2",
                  family=("gaps", "model_gaps"))
GAP_DIFFERENCES = Analysis("gap_differences", _gap_differences, section=sections.gap_differences,
                           template="_gap_differences.html.j2", auto=True, extends="shares", min_models=2,
                           family=("gap_differences",))
OCCUPATIONS = Analysis("occupations", _occupations, requires=("occupation",), section=sections.occupations,
                       template="_occupations.html.j2")
GENDER_DIRECTION = Analysis("gender_direction", _gender_direction, requires=("occupation",),
                            section=sections.gender_direction, template="_gender_direction.html.j2")
REGARD_VALIDITY = Analysis("regard_validity", _regard_validity, requires=("regard",),
                           section=sections.regard_validity, template="_regard_validity.html.j2", auto=True)

__all__ = ["GAP_DIFFERENCES", "GENDER_DIRECTION", "OCCUPATIONS", "REGARD_VALIDITY", "SHARES", "occupation_tables"]
