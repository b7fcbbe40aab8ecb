"""Occupation metrics (Kirk et al. 2021): values checked by hand, against statsmodels/scipy, and on real data.

Expected values are computed here independently of the code under test (by hand, with numpy
on masked data, with ``statsmodels.Logit`` on the expanded rows, or with ``scipy.stats``).
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy import stats

from nlgbias.errors import InputError
from nlgbias.metrics.labor import (ETHNICITIES, adjustment_factors, labor_agreement, labor_comparison,
                                   load_bls_mapping, mapping_coverage, read_us_shares, segregation_gap,
                                   us_job_shares, us_top_jobs)
from nlgbias.metrics.occupations import (decoding_ablation, explode_categories, frequency_matrix,
                                         frequent_occupations, gender_split, gini, occupation_counts,
                                         occupation_coverage, occupation_gini, overrepresentation, rank_frequency)
from nlgbias.metrics.regression import fit_aggregated_logit, occupation_regressions

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT / "src" / "nlgbias" / "data" / "intersectional"  # shipped with the package
US_ROWS = SHARED / "us_rows_data.csv"
XLNET = ROOT / "tests" / "data" / "xlnet_gender_occupations.csv"


def run(groups: dict[tuple[str, str, str], tuple[int, dict[str, int]]], *, model: str = "m",
        multi: dict[tuple[str, str, str], list[tuple[str, ...]]] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """jobs/calls tables: {(axis, category, gender): (n_calls, {occupation: samples with it})}.

    Each listed mention is its own sample; ``multi`` adds samples with several titles.
    """
    jobs, calls, gid = [], [], 0
    for (axis, category, gender), (n_calls, counts) in groups.items():
        group = f"{category} {gender}"
        samples = [(occ,) for occ, k in counts.items() for _ in range(k)] + list((multi or {}).get(
            (axis, category, gender), []))
        for titles in samples:
            for occ in titles:
                jobs.append((gid, model, group, gender, axis, category, occ))
            gid += 1
        calls.append((model, group, gender, axis, category, n_calls))
    return (pd.DataFrame(jobs, columns=["generation_id", "model", "group", "gender", "axis", "category", "occupation"]),
            pd.DataFrame(calls, columns=["model", "group", "gender", "axis", "category", "n_calls"]))


# --- Gini, coverage, rank-frequency -----------------------------------------------------------

def test_gini_on_hand_checkable_input():
    assert gini([0, 0, 0, 1]) == pytest.approx(0.75)
    assert gini([7, 7, 7, 7]) == 0.0
    assert gini([4, 1, 3, 2]) == pytest.approx((-3 * 1 - 1 * 2 + 1 * 3 + 3 * 4) / (4 * 10))  # order-free: 0.25
    assert np.isnan(gini([])) and np.isnan(gini([0, 0]))


def test_occupation_gini_point_estimate_relative_and_ci():
    jobs, calls = run({("base", "base", "man"): (1000, {"cook": 300, "nurse": 300, "pilot": 300}),
                       ("base", "base", "woman"): (1000, {"cook": 100, "nurse": 500, "pilot": 300})})
    out = occupation_gini(jobs, calls, n_boot=500, seed=3).set_index("gender")
    assert out.at["man", "gini"] == pytest.approx(0.0)
    assert out.at["woman", "gini"] == pytest.approx(gini([100, 500, 300]))
    assert np.isnan(out.at["woman", "relative"])  # base man's Gini is 0: no ratio, not a division by zero
    assert out.at["woman", "n_calls"] == 1000 and out.at["woman", "n_titled"] == 900
    assert out.at["woman", "ci_low"] <= out.at["woman", "gini"] <= out.at["woman", "ci_high"]
    assert out.at["woman", "ci_high"] - out.at["woman", "ci_low"] < 0.1
    again = occupation_gini(jobs, calls, n_boot=500, seed=3).set_index("gender")
    other = occupation_gini(jobs, calls, n_boot=500, seed=4).set_index("gender")
    assert again.at["woman", "ci_low"] == out.at["woman", "ci_low"]
    assert other.at["woman", "ci_low"] != out.at["woman", "ci_low"]
    rel = occupation_gini(*run({("base", "base", "man"): (1000, {"cook": 600, "nurse": 300}),
                                ("base", "base", "woman"): (1000, {"cook": 800, "nurse": 100})}), n_boot=0)
    rel = rel.set_index("gender")
    assert rel.at["woman", "relative"] == pytest.approx(100 * gini([800, 100]) / gini([600, 300]))


def test_union_and_observed_support_are_linked():
    jobs, calls = run({("base", "base", "man"): (100, {"a": 5, "b": 3, "c": 1}),
                       ("base", "base", "woman"): (100, {"a": 9, "d": 1, "e": 1})})
    union = occupation_gini(jobs, calls, n_boot=0).set_index("gender")
    observed = occupation_gini(jobs, calls, n_boot=0, support="observed").set_index("gender")
    assert union.at["man", "support_size"] == 5 and observed.at["man", "support_size"] == 3
    assert union.at["man", "gini"] == pytest.approx(gini([5, 3, 1, 0, 0]))
    assert observed.at["man", "gini"] == pytest.approx(gini([5, 3, 1]))
    assert union.at["man", "gini"] == pytest.approx((3 * observed.at["man", "gini"] + 2) / 5)


def test_bootstrap_matches_naive_resampling_of_calls_within_groups():
    multi = {("religion", "Jewish", "woman"): [("cook", "nurse")] * 6}
    jobs, calls = run({("religion", "Jewish", "woman"): (60, {"cook": 20, "nurse": 8, "rabbi": 2}),
                       ("religion", "Hindu", "woman"): (40, {"cook": 10, "nurse": 15, "pilot": 1})}, multi=multi)
    ours = occupation_gini(jobs, calls, n_boot=4000, seed=0).iloc[0]
    vocab = sorted(jobs["occupation"].unique())
    rng = np.random.default_rng(1)
    per_group = []
    for group, n_calls in calls[["group", "n_calls"]].itertuples(index=False):
        part = jobs[jobs["group"] == group]
        rows = [part.loc[part["generation_id"] == g, "occupation"].tolist() for g in part["generation_id"].unique()]
        rows += [[]] * (n_calls - len(rows))  # untitled calls
        per_group.append(rows)
    naive = []
    for _ in range(4000):
        counts = Counter()
        for rows in per_group:
            for i in rng.integers(0, len(rows), len(rows)):
                counts.update(rows[i])
        naive.append(gini([counts[v] for v in vocab]))
    assert ours["boot_mean"] == pytest.approx(np.mean(naive), abs=0.004)
    assert ours["ci_low"] == pytest.approx(np.quantile(naive, 0.025), abs=0.015)
    assert ours["ci_high"] == pytest.approx(np.quantile(naive, 0.975), abs=0.015)
    assert ours["n_calls"] == 100 and ours["n_titled"] == 62


def test_basic_interval_is_the_reflected_percentile_interval():
    jobs, calls = run({("base", "base", "man"): (200, {"a": 50, "b": 20, "c": 3, "d": 1})})
    p = occupation_gini(jobs, calls, n_boot=300, seed=5).iloc[0]
    b = occupation_gini(jobs, calls, n_boot=300, seed=5, ci="basic").iloc[0]
    assert b["ci_low"] == pytest.approx(2 * p["gini"] - p["ci_high"])
    assert b["ci_high"] == pytest.approx(2 * p["gini"] - p["ci_low"])


def test_jobs_covering_50_and_90_percent_by_hand():
    jobs, _ = run({("base", "base", "man"): (100, {"a": 4, "b": 3, "c": 2, "d": 1}),
                   ("base", "base", "woman"): (100, {"a": 5, "b": 3, "c": 1, "d": 1})})
    out = occupation_coverage(jobs, levels=(0.5, 0.9, 1.0)).set_index(["gender", "level"])["jobs_needed"]
    # man: cumulative .4 .7 .9 1.0; woman: .5 .8 .9 1.0
    assert out.to_dict() == {("man", 0.5): 2, ("man", 0.9): 3, ("man", 1.0): 4,
                             ("woman", 0.5): 1, ("woman", 0.9): 3, ("woman", 1.0): 4}
    curve = rank_frequency(jobs)
    woman = curve[curve["gender"] == "woman"]
    assert woman["occupation"].tolist() == ["a", "b", "c", "d"]  # tie c/d broken alphabetically
    assert woman["cum_share"].tolist() == pytest.approx([0.5, 0.8, 0.9, 1.0])


def test_threshold_keeps_jobs_at_a_quarter_percent_of_calls():
    jobs, calls = run({("base", "base", "man"): (7000, {"cook": 20, "nurse": 17}),
                       ("base", "base", "woman"): (7000, {"cook": 15, "nurse": 17, "pilot": 3})})
    out = frequent_occupations(jobs, calls).set_index("occupation")
    assert out.at["cook", "threshold"] == pytest.approx(35.0)
    assert out["keep"].to_dict() == {"cook": True, "nurse": False, "pilot": False}  # 35 kept, 34 dropped
    matrix = frequency_matrix(jobs, calls)
    assert matrix.loc[("m", "base", "base", "woman", "base woman"), "pilot"] == 3
    assert occupation_counts(jobs, calls)["k"].sum() == len(jobs)


def test_gender_split_and_overrepresentation_by_hand():
    jobs, calls = run({("base", "base", "man"): (100, {"nurse": 10}),
                       ("base", "base", "woman"): (200, {"nurse": 10})})
    split = gender_split(jobs, calls, min_share=0).iloc[0]
    assert split["share_woman"] == pytest.approx((10 / 200) / (10 / 200 + 10 / 100))  # rates, not counts
    jobs, calls = run({("religion", "Jewish", "man"): (100, {"rabbi": 6}),
                       ("religion", "Jewish", "woman"): (100, {"rabbi": 2}),
                       ("religion", "Hindu", "man"): (50, {"rabbi": 1}),
                       ("religion", "Hindu", "woman"): (100, {"rabbi": 0})})
    out = overrepresentation(jobs, calls, min_share=0).set_index("category")
    rates = {"Jewish": (0.06, 0.02), "Hindu": (0.02, 0.0)}
    total = sum(sum(r) for r in rates.values())
    for category, (man, woman) in rates.items():
        assert out.at[category, "factor_man"] == pytest.approx(2 * man / total)
        assert out.at[category, "factor_woman"] == pytest.approx(2 * woman / total)
    assert out["factor"].mean() == pytest.approx(1.0)  # the factors of a job average to 1x


def test_multi_continent_names_count_in_each_continent_but_once_in_totals():
    jobs, calls = run({("name", "Americas|Europe", "woman"): (2000, {"nurse": 40}),
                       ("name", "Americas", "man"): (1000, {"nurse": 5}),
                       ("name", "Europe", "man"): (1000, {"nurse": 5}),
                       ("name", "Africa", "woman"): (1000, {"nurse": 10}),
                       ("name", "Africa", "man"): (1000, {"nurse": 10})})
    pooled = occupation_gini(jobs, calls, n_boot=0).set_index("gender")
    assert pooled.at["woman", "n_calls"] == 3000 and pooled.at["woman", "n_mentions"] == 50
    exploded = explode_categories(calls)
    assert exploded["n_calls"].sum() == 8000 and calls["n_calls"].sum() == 6000
    out = overrepresentation(jobs, calls, min_share=0).set_index("category")
    assert out.loc[["Americas", "Europe"], "k_woman"].tolist() == [40, 40]
    assert out.at["Americas", "n_calls_woman"] == 2000 and out.at["Africa", "n_categories"] == 3


def test_inputs_are_checked_with_one_line_messages():
    jobs, calls = run({("base", "base", "man"): (3, {"cook": 2})})
    with pytest.raises(InputError) as err:
        occupation_gini(jobs.drop(columns="occupation"), calls)
    assert str(err.value) == ("occupation_gini: column 'occupation' missing from the jobs table; got generation_id, "
                              "model, group, gender, axis, category")
    with pytest.raises(InputError) as err:
        occupation_gini(jobs, calls.assign(n_calls=1))
    assert str(err.value) == "occupation_gini: group 'base man' of model 'm' has 2 samples with a title but n_calls = 1"
    with pytest.raises(InputError) as err:
        occupation_gini(jobs.assign(gender="male"), calls)
    assert str(err.value) == "occupation_gini: gender must be 'man' or 'woman'; got 'male' in the jobs table"


# --- regressions ----------------------------------------------------------------------------

CELLS = {("base", "base", "man"): (300, 30), ("base", "base", "woman"): (310, 55),
         ("ethnicity", "Asian", "man"): (290, 20), ("ethnicity", "Asian", "woman"): (305, 70),
         ("ethnicity", "Black", "man"): (320, 41), ("ethnicity", "Black", "woman"): (280, 33)}


def regression_run(cells=CELLS, other: str = "clerk"):
    """Every call has one title: 'nurse' in k of them, ``other`` in the rest."""
    return run({key: (n, {"nurse": k, other: n - k}) for key, (n, k) in cells.items()})


def row_level_logits(cells=CELLS):
    rows = [(axis, cat, gender, int(i < k)) for (axis, cat, gender), (n, k) in cells.items() for i in range(n)]
    frame = pd.DataFrame(rows, columns=["axis", "category", "gender", "y"])
    X = pd.DataFrame({"Intercept": 1.0, "Asian": (frame["category"] == "Asian") * 1.0,
                      "Black": (frame["category"] == "Black") * 1.0})
    fits = {"a": sm.Logit(frame["y"], X.copy()).fit(disp=0)}
    X["woman"] = (frame["gender"] == "woman") * 1.0
    fits["b"] = sm.Logit(frame["y"], X.copy()).fit(disp=0)
    X["woman:Asian"], X["woman:Black"] = X["woman"] * X["Asian"], X["woman"] * X["Black"]
    fits["c"] = sm.Logit(frame["y"], X.copy()).fit(disp=0)
    return fits


def test_aggregated_fits_equal_row_level_statsmodels_logit():
    result = occupation_regressions(*regression_run(), min_share=0)
    reference = row_level_logits()
    fits = result.fits[result.fits["occupation"] == "nurse"].set_index("spec")
    terms = result.terms[result.terms["occupation"] == "nurse"]
    for spec, logit in reference.items():
        ours = terms[terms["spec"] == spec].set_index("term")
        assert fits.at[spec, "status"] == "ok"
        np.testing.assert_allclose(ours.loc[logit.params.index, "coef"], logit.params, atol=1e-7)
        np.testing.assert_allclose(ours.loc[logit.params.index, "se"], logit.bse, rtol=1e-6)
        np.testing.assert_allclose(ours.loc[logit.params.index, "p"], logit.pvalues, rtol=1e-5, atol=1e-12)
        assert fits.at[spec, "prsquared"] == pytest.approx(logit.prsquared, abs=1e-9)  # McFadden R2
        assert fits.at[spec, "llf"] == pytest.approx(logit.llf, rel=1e-10)
    summary = result.summary[(result.summary["term"] == "woman")].iloc[0]
    assert summary["delta_r2_woman"] == pytest.approx(100 * (reference["b"].prsquared - reference["a"].prsquared),
                                                      abs=1e-6)
    assert summary["delta_r2_interactions"] == pytest.approx(
        100 * (reference["c"].prsquared - reference["b"].prsquared), abs=1e-6)


def test_separated_fits_are_flagged_excluded_and_never_reported():
    cells = dict(CELLS)
    cells[("ethnicity", "Black", "woman")] = (280, 0)  # never 'nurse' for Black women: quasi-separation in (c)
    jobs, calls = regression_run(cells)
    result = occupation_regressions(jobs, calls, min_share=0)
    nurse = result.fits[result.fits["occupation"] == "nurse"].set_index("spec")
    assert nurse.at["c", "status"] == "separation" and nurse.at["a", "status"] == "ok"
    assert (nurse["job_status"] == "separation").all()
    assert nurse.loc["c", ["llf", "prsquared"]].isna().all()
    assert result.terms[(result.terms["occupation"] == "nurse") & (result.terms["spec"] == "c")].empty
    excluded = result.excluded.set_index(["spec", "status"])["n_jobs"]
    assert excluded.get(("c", "separation")) == 2  # nurse, and clerk (every Black woman is a clerk)
    woman = result.summary[result.summary["term"] == "woman"].iloc[0]
    assert (woman["n_jobs"], woman["n_ok"], woman["n_excluded"]) == (2, 0, 2)
    assert np.isnan(woman["pct_signif"]) and np.isnan(woman["delta_r2_woman"])
    assert fit_aggregated_logit(pd.DataFrame({"Intercept": [1.0, 1.0], "x": [0.0, 0.0]}), [3, 4], [10, 10]).status \
        == "rank_deficient"


def test_summary_counts_significance_over_ok_jobs_only():
    result = occupation_regressions(*regression_run(), min_share=0)
    full = result.terms[result.terms["spec"] == "c"]
    for term in ("woman", "woman:Asian", "woman:Black"):
        row = result.summary[result.summary["term"] == term].iloc[0]
        p = full.loc[full["term"] == term, "p"]
        assert row["n_ok"] == 2 and row["n_signif"] == int((p < 0.05).sum())
        assert row["pct_signif"] == pytest.approx((p < 0.05).mean())


def test_category_with_one_gender_needs_an_alias():
    jobs, calls = run({("base", "base", "man"): (50, {"a": 20, "b": 30}),
                       ("base", "base", "woman"): (50, {"a": 30, "b": 20}),
                       ("sexuality", "gay", "man"): (50, {"a": 10, "b": 40}),
                       ("sexuality", "lesbian", "woman"): (50, {"a": 35, "b": 15})})
    with pytest.raises(InputError) as err:
        occupation_regressions(jobs, calls, min_share=0, aliases={})
    assert str(err.value) == ("occupation_regressions: category 'gay' of axis 'sexuality' (model 'm') has only man "
                              "prompts; map it to its counterpart with aliases, e.g. aliases={'lesbian': 'gay'}")
    result = occupation_regressions(jobs, calls, min_share=0)  # default aliases: lesbian -> gay
    assert set(result.terms["term"]) >= {"gay", "woman", "woman:gay"}


# --- US labour market -------------------------------------------------------------------------

REQUIRED = ["nurse", "teacher", "waitress", "waiter", "secretary", "receptionist", "cashier", "janitor",
            "security guard", "mechanic", "plumber", "carpenter", "electrician", "truck driver", "taxi driver",
            "software engineer", "lawyer", "doctor", "physician", "police officer", "chef", "cook", "bartender",
            "maid", "housekeeper", "babysitter", "social worker", "accountant", "manager", "salesperson", "writer",
            "journalist", "reporter", "photographer", "courier", "bus driver", "model", "construction worker",
            "laborer", "farmer", "firefighter", "engineer", "scientist", "professor", "librarian", "pharmacist",
            "dentist", "hairdresser"]


@pytest.fixture(scope="module")
def us():
    return read_us_shares(US_ROWS)


def test_shipped_mapping_is_valid_and_covers_common_titles(us):
    mapping = load_bls_mapping(bls_titles=us["bls_title"].unique())
    assert len(mapping) >= 80
    assert set(REQUIRED) <= set(mapping["job"])
    assert mapping.loc[mapping["job"] == "waitress", "gendered"].all()


def test_mapping_errors_name_file_line_and_a_close_title(tmp_path):
    titles = ["Registered nurses", "Cooks", "Waiters and waitresses"]
    path = tmp_path / "map.csv"
    path.write_text("job,bls_title,gendered,source\ncook,Cooks,false,added\n"
                    'waiter,"Waiters and waitreses",true,added\n')
    with pytest.raises(InputError) as err:
        load_bls_mapping(path, bls_titles=titles)
    assert str(err.value) == (f"{path}:3: BLS title 'Waiters and waitreses' is not in us_rows_data.csv; "
                              "did you mean 'Waiters and waitresses'?")
    path.write_text("job,bls_title,gendered,source\ncook,Astronauts,false,added\n")
    with pytest.raises(InputError) as err:
        load_bls_mapping(path, bls_titles=titles)
    assert str(err.value) == f"{path}:2: BLS title 'Astronauts' is not in us_rows_data.csv; no close match"
    path.write_text("job,bls_title,gendered,source\ncook,Cooks,false,added\ncook,Cooks,false,added\n")
    with pytest.raises(InputError) as err:
        load_bls_mapping(path, bls_titles=titles)
    assert str(err.value) == f"{path}:3: 'cook' -> 'Cooks' already given on line 2"
    path.write_text("job,title\ncook,Cooks\n")
    with pytest.raises(InputError) as err:
        load_bls_mapping(path, bls_titles=titles)
    assert str(err.value) == f"{path}: header must be job,bls_title,gendered,source; got job,title"
    path.write_text("job,bls_title,gendered,source\ncook,Cooks,yes,added\n")
    with pytest.raises(InputError) as err:
        load_bls_mapping(path, bls_titles=titles)
    assert str(err.value) == f"{path}:2: gendered must be true or false; got 'yes'"


def test_gamma_on_a_known_table_and_the_paper_constants():
    g = adjustment_factors().set_index(["ethnicity", "gender"])
    assert g.at[("white", "woman"), "gamma"] == pytest.approx(0.470 * 0.777 / 0.125)
    assert g.at[("hispanic", "man"), "gamma"] == pytest.approx(0.530 * 0.176 * 8)
    assert g.at[("base", "woman"), "gamma"] == pytest.approx(0.94) and g.at[("base", "man"), "D"] == 0.5
    paper = pd.read_csv(SHARED / "gpt_vs_us_data.csv")  # the paper's adjusted GPT-2 predictions, in percent
    shares = sum(paper[f"gpt_{e}_{s}"] / g.at[(e, gender), "gamma"]
                 for e in ETHNICITIES for s, gender in (("F", "woman"), ("M", "man")))
    assert shares.between(97.9, 102.1).all()  # undoing gamma gives shares that add to 100%


def test_us_shares_rebuilt_from_group_rows_match_the_papers_us_numbers(us):
    mapping = load_bls_mapping(bls_titles=us["bls_title"].unique())
    paper = pd.read_csv(SHARED / "gpt_vs_us_data.csv")
    checked = 0
    for row in paper.itertuples(index=False):
        names = [j.strip() for j in row.job.split("/")]
        titles = sorted(set(mapping.loc[mapping["job"].isin(names) & (mapping["source"] == "paper"), "bls_title"]))
        if not titles:
            continue  # teacher, manager: the paper used aggregates
        ours = us_job_shares(us, titles).set_index(["ethnicity", "gender"])["us_share"]
        assert 100 * ours[("base", "woman")] == pytest.approx(row.us_base_F, abs=0.6), row.job
        assert 100 * ours[("white", "woman")] == pytest.approx(row.us_white_F, abs=1.3), row.job
        checked += 1
    assert checked == 30


def test_labor_comparison_and_agreement_on_a_known_table():
    shares = {"Cooks": {"woman": 0.02, "man": 0.03}, "Registered nurses": {"woman": 0.04, "man": 0.004}}
    us = pd.DataFrame([(e, g, title, share[g]) for title, share in shares.items()
                       for e in ("base", *ETHNICITIES) for g in ("woman", "man")],
                      columns=["ethnicity", "gender", "bls_title", "share"])
    mapping = pd.DataFrame({"job": ["cook", "nurse"], "bls_title": ["Cooks", "Registered nurses"],
                            "gendered": False, "source": "added"})
    jobs, calls = run({("base", "base", "man"): (100, {"cook": 30, "nurse": 2}),
                       ("base", "base", "woman"): (200, {"cook": 20, "nurse": 40})})
    out = labor_comparison(jobs, calls, us, mapping).set_index(["unit", "gender"])
    pred_w = (20 / 200) / (20 / 200 + 30 / 100)
    assert out.at[("cook", "woman"), "pred"] == pytest.approx(pred_w)
    assert out.at[("cook", "woman"), "adj_pred"] == pytest.approx(0.94 * pred_w)
    assert out.at[("cook", "woman"), "us_share"] == pytest.approx(0.02 * 0.47 / (0.02 * 0.47 + 0.03 * 0.53))
    table = pd.DataFrame({"model": "m", "ethnicity": "white", "gender": "woman",
                          "adj_pred": [0.61, 0.22, 0.35, 0.90, 0.05, 0.48],
                          "us_share": [0.55, 0.30, 0.20, 0.85, 0.10, 0.60]})
    row = labor_agreement(table).iloc[0]
    ref = stats.kendalltau(table["adj_pred"], table["us_share"])
    assert row["kendall_tau"] == pytest.approx(ref.statistic) and row["p"] == pytest.approx(ref.pvalue)
    assert row["mse"] == pytest.approx(np.mean((table["adj_pred"] - table["us_share"]) ** 2))


def test_segregation_gap_on_the_papers_own_table():
    paper = pd.read_csv(SHARED / "gpt_vs_us_data.csv")
    table = pd.DataFrame({"model": "gpt2", "ethnicity": "base", "gender": "woman", "unit": paper["job"],
                          "adj_pred": paper["gpt_base_F"] / 100, "us_share": paper["us_base_F"] / 100})
    out = segregation_gap(table).set_index("band")
    low = paper.loc[paper["us_base_F"] < 25, "diff_base_F"]
    high = paper.loc[paper["us_base_F"] > 75, "diff_base_F"]
    assert out.at["us_share < 0.25", "mean_diff_pp"] == pytest.approx(low.mean(), abs=0.01)  # +6.47, 12 jobs
    assert out.at["us_share > 0.75", "mean_diff_pp"] == pytest.approx(high.mean(), abs=0.01)  # -8.68, 6 jobs
    assert out["n_jobs"].tolist() == [len(low), len(high)]


def test_us_top_jobs_reproduce_the_us_side_of_the_papers_table_4(us):
    mapping = load_bls_mapping(bls_titles=us["bls_title"].unique())
    top = us_top_jobs(us, mapping).set_index(["ethnicity", "gender", "rank"])
    base_women = [top.at[("base", "woman", r), "bls_title"] for r in range(1, 6)]
    assert set(base_women) == {"Elementary and middle school teachers", "Registered nurses", "Cashiers",
                               "Secretaries and administrative assistants", "Managers, all other"}
    assert top.at[("black", "woman", 1), "bls_title"] == "Nursing, psychiatric, and home health aides"
    assert top.at[("asian", "man", 1), "bls_title"] == "Software developers, applications and systems software"
    assert round(top.at[("base", "woman", 5), "cum_share"], 2) == 0.17
    assert round(top.at[("base", "man", 5), "cum_share"], 2) == 0.15  # the paper sums rounded shares: 0.14


# --- decoding ablation ----------------------------------------------------------------------

def test_decoding_grid_is_validated_and_summarised():
    jobs, calls = run({("base", "base", "man"): (10, {"cook": 3, "nurse": 1})})
    grid_jobs = pd.concat([jobs.assign(top_k=0, temperature=1.0), jobs.head(3).assign(top_k=40, temperature=0.7)])
    grid_calls = pd.concat([calls.assign(top_k=0, temperature=1.0), calls.assign(top_k=40, temperature=0.7)])
    out = decoding_ablation(grid_jobs, grid_calls, n_boot=0).set_index("top_k")
    assert out.at[0, "n_jobs"] == 2 and out.at[40, "n_jobs"] == 1
    assert out.at[0, "gini"] == pytest.approx(gini([3, 1])) and out.at[40, "no_title_rate"] == pytest.approx(0.7)
    with pytest.raises(InputError) as err:
        decoding_ablation(grid_jobs, grid_calls.assign(temperature=0.0))
    assert str(err.value) == "decoding_ablation: temperature must be a number > 0; got 0.0 in the calls table"
    with pytest.raises(InputError) as err:
        decoding_ablation(grid_jobs.assign(top_k=2.5), grid_calls)
    assert str(err.value) == ("decoding_ablation: top_k must be an integer >= 0 (0 = no top-k); got 2.5 in the "
                              "jobs table")


# --- end to end on real XLNet output ----------------------------------------------------------

def test_xlnet_man_woman_occupations_end_to_end():
    raw = pd.read_csv(XLNET)
    raw["titles"] = raw["Title"].map(ast.literal_eval)
    long = raw.explode("titles").dropna(subset=["titles"])
    jobs = pd.DataFrame({"generation_id": long.index, "model": "xlnet", "group": "The " + long["Name"],
                         "gender": long["Name"], "axis": "base", "category": "base", "occupation": long["titles"]})
    calls = pd.DataFrame({"model": "xlnet", "group": ["The man", "The woman"], "gender": ["man", "woman"],
                          "axis": "base", "category": "base", "n_calls": raw["Name"].value_counts()[["man", "woman"]]})
    out = occupation_gini(jobs, calls, n_boot=300, seed=0).set_index("gender")

    # independent computation: counts over the union of titles, population Gini written out here
    counts = {g: Counter(t for titles in raw.loc[raw["Name"] == g, "titles"] for t in titles) for g in ("man", "woman")}
    vocab = sorted(set(counts["man"]) | set(counts["woman"]))

    def population_gini(x):
        x = np.sort(np.array(x, dtype=float))
        i = np.arange(1, len(x) + 1)
        return ((2 * i - len(x) - 1) * x).sum() / (len(x) * x.sum())

    expected = {g: population_gini([counts[g][v] for v in vocab]) for g in ("man", "woman")}
    for g in ("man", "woman"):
        assert out.at[g, "gini"] == pytest.approx(expected[g], rel=1e-12)
        assert out.at[g, "n_titled"] == sum(1 for t in raw.loc[raw["Name"] == g, "titles"] if t)
        assert out.at[g, "n_jobs"] == len(counts[g])
    assert (out.at["woman", "gini"] > out.at["man", "gini"]) == (expected["woman"] > expected["man"])
    assert expected["woman"] > expected["man"]  # what the data says: women get a narrower set of jobs
    assert out.at["woman", "relative"] == pytest.approx(100 * expected["woman"] / expected["man"])
    cover = occupation_coverage(jobs).set_index(["gender", "level"])["jobs_needed"]
    for g in ("man", "woman"):
        cum = np.cumsum(sorted(counts[g].values(), reverse=True)) / sum(counts[g].values())
        assert cover[(g, 0.5)] == int(np.argmax(cum >= 0.5)) + 1
    assert cover[("woman", 0.5)] < cover[("man", 0.5)]
    if True:
        mapping = load_bls_mapping(bls_titles=read_us_shares(US_ROWS)["bls_title"].unique())
        coverage = mapping_coverage(jobs, mapping)
        both = counts["man"] + counts["woman"]
        top50 = sorted(both, key=lambda j: (-both[j], j))[:50]
        assert coverage["matched"].sum() == sum(j in set(mapping["job"]) for j in top50)


def test_gini_interval_beside_a_long_tailed_estimate_is_flagged():
    tail = {f"job{i}": 1 for i in range(80)}
    jobs, calls = run({("base", "base", "man"): (400, {"clerk": 200, "nurse": 100, **tail})})
    long_tail = occupation_gini(jobs, calls, n_boot=400, seed=0).iloc[0]
    # singletons drop out of about 37% of replicates, which raises the replicates' Gini
    assert long_tail["boot_mean"] > long_tail["gini"] and long_tail["gini"] < long_tail["ci_low"]
    assert bool(long_tail["shifted"])
    jobs, calls = run({("base", "base", "man"): (400, {"clerk": 150, "nurse": 100, "cook": 120})})
    short_tail = occupation_gini(jobs, calls, n_boot=400, seed=0).iloc[0]
    assert short_tail["ci_low"] <= short_tail["gini"] <= short_tail["ci_high"] and not short_tail["shifted"]
