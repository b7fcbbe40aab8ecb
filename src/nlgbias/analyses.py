"""The analyses a suite can ask for (its ``analyses:`` key), each a function from the scored
samples table to named metric tables.

``shares``
    Label shares per group with bootstrap CIs, group and model gaps with exact permutation
    tests and Benjamini-Hochberg adjustment (Sheng et al. 2019).
``occupations``
    Which jobs a model gives to which group (Kirk et al. 2021): frequencies, rank-frequency,
    coverage, Gini, gender splits, over-representation, nested logistic regressions and, for
    base and ethnicity prompts, the comparison with US labour statistics.
``gender_direction``
    The gender-direction bias b = w.g of the parsed profession and the individual-fairness check
    of Yeo & Chen (Definition 2.2).

This module only wires stages together: the statistics live in :mod:`nlgbias.metrics`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from nlgbias.metrics.results import Results
from nlgbias.scorers.base import LABELS
from nlgbias.words import gender_side

ANALYSES = ("shares", "occupations", "gender_direction")
REQUIRES = {"occupations": "occupation", "gender_direction": "occupation"}  # analysis -> scorer it reads


@dataclass(frozen=True)
class AnalysisOptions:
    """Statistics settings shared by every analysis of a run."""

    seed: int = 0
    n_boot: int = 2000
    confidence: float = 0.95
    min_n: int = 30
    bls_mapping: str | None = None  # a user's job -> BLS title mapping (default: the shipped one)


def run_analyses(names, samples: pd.DataFrame, scored: pd.DataFrame, suite, options: AnalysisOptions) -> Results:
    """Run each named analysis and merge their tables into one :class:`Results`.

    Parameters
    ----------
    names : sequence of str
        From the suite's ``analyses`` key.
    samples : pandas.DataFrame
        The run's samples table (one row per generation, with ``<scorer>_label/_details``).
    scored : pandas.DataFrame
        One row per (generation, scorer): ``generation_id, model, context, group, is_empty,
        scorer, label``.
    suite : Suite
    options : AnalysisOptions
    """
    results = Results({}, {"analyses": list(names)})
    for name in names:
        results = results.merged(REGISTRY[name](samples, scored, suite, options))
    return results


def _shares(samples, scored, suite, options: AnalysisOptions) -> Results:
    from nlgbias.metrics import compute_metrics

    # The 4-class regard scorer adds "other"; it sits between neutral and positive so that the
    # charts still run from negative (left) to positive (right).  Other scorers show it as 0.
    labels = LABELS if not (scored["label"] == "other").any() else ("negative", "neutral", "other", "positive")
    labelled = scored[scored["label"].isin(labels)]
    return compute_metrics(labelled, comparisons=suite.comparisons, labels=labels, n_boot=options.n_boot,
                           confidence=options.confidence, seed=options.seed, min_n=options.min_n)


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


def _occupations(samples, scored, suite, options: AnalysisOptions) -> Results:
    from nlgbias.metrics import labor
    from nlgbias.metrics.occupations import (gender_split, occupation_coverage, occupation_gini, overrepresentation,
                                             rank_frequency)
    from nlgbias.metrics.regression import occupation_regressions

    jobs, calls = occupation_tables(samples)
    titled = jobs.groupby(["model", "group"])["generation_id"].nunique()
    calls = calls.assign(n_titled=[int(titled.get((m, g), 0)) for m, g in zip(calls["model"], calls["group"])])
    calls["no_title_share"] = 1 - calls["n_titled"] / calls["n_calls"]
    tables = {"occupation_calls": calls,
              "occupation_counts": jobs.groupby(["model", "axis", "category", "gender", "group", "occupation"])
              .size().rename("k").reset_index()}
    by = ["model", "gender", "axis"]
    tables["occupation_rank_frequency"] = rank_frequency(jobs, by=by)
    tables["occupation_coverage"] = occupation_coverage(jobs, by=by)
    has_base_man = ((calls["axis"] == "base") & (calls["gender"] == "man")).any()
    tables["occupation_gini"] = occupation_gini(jobs, calls.drop(columns=["n_titled", "no_title_share"]), by=by,
                                                n_boot=min(options.n_boot, 1000), confidence=options.confidence,
                                                ci="basic", seed=options.seed,
                                                reference=("man", "base") if has_base_man else ("man", calls["axis"].iloc[0]))
    base_calls = calls.drop(columns=["n_titled", "no_title_share"])
    meta: dict = {"occupations": {"gini_ci": "basic bootstrap interval, clipped to [0, 1] (resampling calls within each prompt group)",
                                  "threshold": "jobs under 0.25% of calls are left out of splits and regressions"}}
    if has_base_man and (calls["axis"] == "base").any():
        tables["occupation_gender_split"] = gender_split(jobs, base_calls, axis="base")
        other_axes = [a for a in calls["axis"].unique() if a != "base"]
        if other_axes:
            tables["occupation_overrepresentation"] = overrepresentation(jobs, base_calls, axes=other_axes)
            regressions = occupation_regressions(jobs, base_calls, axes=other_axes)
            tables["occupation_regression_summary"] = regressions.summary
            tables["occupation_regression_fits"] = regressions.fits
            tables["occupation_regression_excluded"] = regressions.excluded
            meta["occupations"]["regressions"] = regressions.meta
        if (calls["axis"] == "ethnicity").any():
            us, mapping = labor.us_shares_and_mapping(options.bls_mapping)
            comparison = labor.labor_comparison(jobs, base_calls, us, mapping)
            tables["labor_coverage"] = pd.concat(
                [labor.mapping_coverage(j, mapping).assign(model=m) for m, j in jobs.groupby("model", sort=False)],
                ignore_index=True)
            tables["labor_comparison"] = comparison
            tables["labor_agreement"] = labor.labor_agreement(comparison)
            tables["labor_segregation"] = labor.segregation_gap(comparison)
            tables["labor_top_jobs"] = labor.top_jobs_table(jobs, us, mapping)
    return Results(tables, meta)


# --- gender direction (Yeo & Chen) -------------------------------------------------------------

def _gender_direction(samples, scored, suite, options: AnalysisOptions) -> Results:
    from nlgbias.embeddings import default_space
    from nlgbias.metrics.gender_direction import (bias_by_space, fairness_check, gender_direction, hard_debias,
                                                  profession_bias_table, sanity_check)

    titles = samples["occupation_details"].map(lambda d: json.loads(d)["occupations"] if isinstance(d, str) else [])
    gender = gender_side(samples["gender"])
    parsed = samples[["generation_id", "model", "template_id", "prompt", "group"]].assign(
        gender=gender, profession=titles.map(lambda t: t[0] if t else None))
    parsed = parsed[parsed["gender"].notna()]
    space = default_space()
    direction = gender_direction(space)
    bias = profession_bias_table(parsed, space=space, direction=direction, n_boot=options.n_boot,
                                 confidence=options.confidence, seed=options.seed)
    tables = {"gender_bias_by_prompt": bias.by_prompt, "gender_bias_by_group": bias.by_group,
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
    tables["fairness_pairs"] = check.pairs
    tables["fairness_lipschitz"] = check.lipschitz
    meta = {"gender_direction": {"space": getattr(space, "name", "minilm"), "explained_variance": direction.explained_variance,
                                 "sign": "female positive: b = w.g > 0 leans female", **check.meta}}
    return Results(tables, meta)


REGISTRY: dict[str, Callable] = {"shares": _shares, "occupations": _occupations, "gender_direction": _gender_direction}
