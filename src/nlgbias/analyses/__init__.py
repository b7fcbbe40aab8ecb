"""The analyses a suite can ask for (its ``analyses:`` key): one registry entry each.

An :class:`Analysis` declares everything about a probe's statistics in one place: its name, the
scorers it reads, the suite kind it applies to, its compute function (run tables -> named metric
tables) and its report section (a context function plus a template).  The suite loader's list of
valid analyses, the run's scorer checks and the report's sections are derived from
:data:`REGISTRY`; adding a probe is one :func:`register` call, a metrics module and a template
(see ``docs/extending.md``).

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
``pronouns``
    Next-word pronoun probabilities after occupation prompts (Vig et al. 2020 templates and
    natural sentences): divergences, perturbations, certainty, saliency, default, validity.

This module only wires stages together: the statistics live in :mod:`nlgbias.metrics`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from nlgbias.metrics.results import Results, adjust_family
from nlgbias.report import sections
from nlgbias.scorers.base import LABELS
from nlgbias.words import gender_side

if TYPE_CHECKING:
    from nlgbias.suites import Suite


@dataclass(frozen=True)
class AnalysisOptions:
    """Statistics settings shared by every analysis of a run."""

    seed: int = 0
    n_boot: int = 2000
    confidence: float = 0.95
    min_n: int = 30
    bls_mapping: str | None = None  # a user's job -> BLS title mapping (default: the shipped one)


@dataclass(frozen=True)
class RunTables:
    """What an analysis reads.

    ``samples``: the run's samples table (generation suites: one row per generation with
    ``<scorer>_label/_details``; pronoun suites: one row per model and prompt with the
    probabilities).  ``scored``: one row per (generation, scorer) with ``generation_id, model,
    context, group, is_empty, scorer, label`` (empty for pronoun suites).  ``probes``: a stage's
    other tables by name (pronoun suites: ``saliency``, ``default``).
    """

    samples: pd.DataFrame
    scored: pd.DataFrame
    suite: Suite
    probes: Mapping[str, pd.DataFrame] = field(default_factory=dict)


@dataclass(frozen=True)
class Analysis:
    """One registry entry.

    name : the suite's ``analyses:`` value and the report section's context name.
    compute : ``compute(tables: RunTables, options: AnalysisOptions) -> Results``.
    requires : scorers the analysis reads (a run without one of them stops before generating).
    kind : the suite kind it applies to, ``generation`` or ``pronoun``.
    section : ``section(results, samples, manifest) -> dict | None``, the template's context.
    template : the section's Jinja template: a file name under ``nlgbias/report/templates`` or a path.
    auto : run whenever the run has every scorer in ``requires``, whether or not the suite lists it
        (for checks that belong to a scorer rather than to a probe, such as regard's validity).
    family : its tables whose ``p`` joins the run's Benjamini-Hochberg family of bias comparisons
        (:func:`~nlgbias.metrics.results.adjust_family` sets ``p_adj`` and ``mde`` over all of them).
    extends : an ``auto`` analysis that builds on another runs only where the run performs that one.
    min_models : an ``auto`` analysis runs only for runs with at least this many models.
    """

    name: str
    compute: Callable[[RunTables, AnalysisOptions], Results]
    requires: tuple[str, ...] = ()
    kind: str = "generation"
    section: Callable[[Results, pd.DataFrame, dict], dict | None] | None = None
    template: str | Path | None = None
    auto: bool = False
    family: tuple[str, ...] = ()
    extends: str | None = None
    min_models: int = 1


REGISTRY: dict[str, Analysis] = {}


def register(analysis: Analysis) -> Analysis:
    """Add (or replace) an analysis; it becomes valid in suites and gets its report section."""
    REGISTRY[analysis.name] = analysis
    return analysis


def analysis_names(kind: str = "generation") -> tuple[str, ...]:
    """The registered analyses a suite of ``kind`` may ask for, in registry order."""
    return tuple(name for name, a in REGISTRY.items() if a.kind == kind)


def analyses_for(suite: Suite, scorers: Sequence[str], models: int = 1) -> tuple[str, ...]:
    """The analyses a run performs: the suite's, then every ``auto`` analysis whose scorers it has
    (and, where it says so, the analysis it extends and its minimum number of ``models``)."""
    extra = [name for name, a in REGISTRY.items()
             if a.auto and a.kind == suite.kind and name not in suite.analyses and set(a.requires) <= set(scorers)
             and (a.extends is None or a.extends in suite.analyses) and models >= a.min_models]
    return (*suite.analyses, *extra)


def run_analyses(names, tables: RunTables, options: AnalysisOptions) -> Results:
    """Run each named analysis and merge their tables into one :class:`Results`.

    Parameters
    ----------
    names : sequence of str
        From the suite's ``analyses`` key.
    tables : RunTables
    options : AnalysisOptions
    """
    # Probability (pronoun) runs have never listed their one analysis in metrics.json; kept so
    # that their outputs stay byte-identical (tests/test_golden.py).
    results = Results({}, {"analyses": list(names)} if tables.suite.kind == "generation" else {})
    for name in names:
        results = results.merged(REGISTRY[name].compute(tables, options))
    family = [table for name in names for table in REGISTRY[name].family]
    return adjust_family(results, family) if family else results


def _share_labels(scored: pd.DataFrame) -> tuple[pd.DataFrame, tuple[str, ...]]:
    """The scored rows whose label the share analyses count, and those labels in chart order."""
    # The 4-class regard scorer adds "other"; it sits between neutral and positive so that the
    # charts still run from negative (left) to positive (right).  Other scorers show it as 0.
    labels = LABELS if not (scored["label"] == "other").any() else ("negative", "neutral", "other", "positive")
    return scored[scored["label"].isin(labels)], tuple(labels)


def _shares(tables: RunTables, options: AnalysisOptions) -> Results:
    from nlgbias.metrics import compute_metrics

    labelled, labels = _share_labels(tables.scored)
    return compute_metrics(labelled, comparisons=tables.suite.comparisons, labels=labels, n_boot=options.n_boot,
                           confidence=options.confidence, seed=options.seed, min_n=options.min_n)


def _gap_differences(tables: RunTables, options: AnalysisOptions) -> Results:
    """Each comparison's gap in one model minus the same gap in another (every model pair)."""
    from itertools import combinations

    from nlgbias.metrics.gap_differences import gap_differences
    from nlgbias.metrics.shares import group_shares

    labelled, labels = _share_labels(tables.scored)
    models = list(dict.fromkeys(labelled["model"]))
    if len(models) < 2:
        return Results({}, {})
    counts = group_shares(labelled, labels=labels, n_boot=1, seed=options.seed, min_n=options.min_n)  # n, k only
    table = gap_differences(counts, pairs=tables.suite.comparisons, models=list(combinations(models, 2)),
                            n_boot=options.n_boot, confidence=options.confidence, seed=options.seed,
                            min_n=options.min_n)
    return Results({"gap_differences": table}, {"gap_differences": {
        "estimate": "gap difference: (share[model_a, group_a] - share[model_a, group_b]) - (share[model_b, group_a] "
                    "- share[model_b, group_b]); cells a1, a2, b1, b2 = model_a or model_b, group_a or group_b",
        "ci": f"{options.confidence:.0%} percentile bootstrap, {options.n_boot} replicates, each of the four cells "
              "resampled within itself",
        "test": "exact two-sided stratified permutation test: model labels permuted within each group "
                "(hypergeometric in each group, convolved)",
        "mde": "normal approximation with every cell at the pooled share, at the family's Bonferroni level, plus a "
               "continuity correction of sum(1/n)/4"}})


def _regard_validity(tables: RunTables, options: AnalysisOptions) -> Results:
    """Low-confidence regard shares per (model, context, group) and their gaps within each comparison."""
    from nlgbias.metrics.validity import THRESHOLD, low_confidence

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
    from nlgbias.metrics import labor
    from nlgbias.metrics.occupations import (gender_split, occupation_coverage, occupation_gini, overrepresentation,
                                             rank_frequency)
    from nlgbias.metrics.regression import occupation_regressions

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
    from nlgbias.embeddings import default_space
    from nlgbias.metrics.gender_direction import (bias_by_space, fairness_check, gender_direction, hard_debias,
                                                  profession_bias_table, sanity_check)

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


# --- pronoun probabilities (Vig et al. 2020) ----------------------------------------------------

def _pronouns(tables: RunTables, options: AnalysisOptions) -> Results:
    """The measures of the pronoun probe as named tables (Tables 3-6 and 8 of the paper, validity)."""
    from nlgbias.metrics import labor
    from nlgbias.probes.pronouns import stats as measures
    from nlgbias.resources import data_path

    sal, default = tables.probes.get("saliency", pd.DataFrame()), tables.probes.get("default", pd.DataFrame())
    kw: dict[str, Any] = dict(n_boot=options.n_boot, confidence=options.confidence, seed=options.seed)
    probs = measures.pronoun_measures(tables.samples)
    orig = probs[probs["perturbation"] == "orig"]
    out = {
        "pronoun_divergence": measures.divergence_table(orig, **kw),
        "pronoun_perturbation": measures.perturbation_table(probs, **kw),
        "pronoun_certainty": measures.certainty_table(orig.dropna(subset=["top1"]), **kw),
    }
    templated = orig[orig["template_id"] != orig["profession"]]
    if not templated.empty:
        out["pronoun_templates"] = measures.template_table(templated, **kw)
    if not sal.empty:
        values = {"profession": sal["profession_saliency"].to_numpy(float), "last": sal["last_saliency"].to_numpy(float)}
        out["pronoun_saliency"] = measures.mean_table(sal, ["model", "prompt_set"], values, where="saliency", **kw)
    if not default.empty:
        out["pronoun_default"] = default
    scores = measures.read_profession_scores(data_path("debiaswe", "professions.json"))
    validity = [measures.score_correlation(orig, scores, score=s) for s in ("stereotypical", "definitional")]
    us, mapping = labor.us_shares_and_mapping()
    shares = {}
    for job, titles in mapping.groupby("job")["bls_title"]:
        base = labor.us_job_shares(us, list(titles))
        women = base[(base["ethnicity"] == "base") & (base["gender"] == "woman")]["us_share"]
        if len(women) and np.isfinite(women.iloc[0]):
            shares[str(job).lower()] = float(women.iloc[0])
    validity.append(measures.share_correlation(orig, shares))
    out["pronoun_validity"] = pd.concat(validity, ignore_index=True)
    meta = {"pronouns": {
        "note": "KL(P(he) || P(she)) over 20 equal-width bins on [0, 1] with 0.5 added to every bin; EMD is "
                "scipy.stats.wasserstein_distance on the raw values; CIs resample prompts.",
        "n_boot": options.n_boot, "seed": options.seed}}
    return Results(out, meta)


register(Analysis("shares", _shares, section=sections.shares, template="_shares.html.j2",
                  family=("gaps", "model_gaps")))
register(Analysis("gap_differences", _gap_differences, section=sections.gap_differences,
                  template="_gap_differences.html.j2", auto=True, extends="shares", min_models=2,
                  family=("gap_differences",)))
register(Analysis("occupations", _occupations, requires=("occupation",), section=sections.occupations,
                  template="_occupations.html.j2"))
register(Analysis("gender_direction", _gender_direction, requires=("occupation",), section=sections.gender_direction,
                  template="_gender_direction.html.j2"))
register(Analysis("regard_validity", _regard_validity, requires=("regard",), section=sections.regard_validity,
                  template="_regard_validity.html.j2", auto=True))
register(Analysis("pronouns", _pronouns, kind="pronoun", section=sections.pronouns, template="_pronouns.html.j2"))

__all__ = ["Analysis", "AnalysisOptions", "REGISTRY", "RunTables", "analyses_for", "analysis_names",
           "occupation_tables", "register", "run_analyses"]

