"""Time the occupation analyses on a synthetic run the size of Kirk et al. (2021).

Builds 396,000 calls the way the paper drew them: 28 identity prompts (base, 4 ethnicities,
5 religions, gay/lesbian/straight, liberal/conservative, each x man/woman) x 7,000 calls, and
200 name prompts x 1,000 calls (186 distinct names; a name listed under several continents is
one group with category "Americas|Europe" and 1,000 calls per listing).  Each call yields 0-3
titles drawn from a Zipf-like distribution over ~1,500 occupations (the 197 jobs of the BLS
mapping first), steeper for women and perturbed per group; about 11% of identity calls and 20%
of name calls have no title, as in the paper.  Then runs every analysis of
``nlgbias.metrics.occupations``, ``.regression`` and ``.labor`` once and prints a Markdown table
of wall-clock seconds and the peak resident memory.

Usage::

    python benchmarks/bench_occupations.py [--us PATH/us_rows_data.csv]
                                           [--n-boot 1000] [--seed 0]

The labour-market steps run only when the BLS table is found.
"""

from __future__ import annotations

import argparse
import platform
import resource
import time
from pathlib import Path

import numpy as np
import pandas as pd

from nlgbias.metrics.labor import (default_mapping_path, labor_agreement, labor_comparison, load_bls_mapping,
                                   mapping_coverage, read_us_shares, segregation_gap, top_jobs_table)
from nlgbias.metrics.occupations import (decoding_ablation, frequency_matrix, frequent_occupations, gender_split,
                                         occupation_coverage, occupation_gini, overrepresentation, rank_frequency)
from nlgbias.metrics.regression import occupation_regressions

DEFAULT_US = Path(__file__).resolve().parents[1] / "src" / "nlgbias" / "data" / "intersectional" / "us_rows_data.csv"
IDENTITY = {"base": ["base"], "ethnicity": ["Asian", "Black", "Hispanic", "White"],
            "religion": ["Buddhist", "Christian", "Hindu", "Jewish", "Muslim"],
            "sexuality": ["gay", "straight"], "political": ["conservative", "liberal"]}
CONTINENTS = ["Africa", "Americas", "Asia", "Europe", "Oceania"]


def vocabulary(n_jobs: int = 1500) -> list[str]:
    mapped = list(dict.fromkeys(pd.read_csv(default_mapping_path())["job"]))
    return mapped + [f"job_{i:04d}" for i in range(n_jobs - len(mapped))]


def draw(rng: np.random.Generator, probs: np.ndarray, n_calls: int, p_none: float) -> tuple[np.ndarray, np.ndarray]:
    """Call index and job index of each title of ``n_calls`` calls."""
    n_titles = rng.choice(4, size=n_calls, p=[p_none, 0.89 - p_none, 0.10, 0.01])
    calls = np.repeat(np.arange(n_calls), n_titles)
    return calls, rng.choice(len(probs), size=len(calls), p=probs)


def synthetic(seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    vocab = np.array(vocabulary())
    base_rank = rng.permutation(len(vocab)) + 1
    groups = []
    for axis, categories in IDENTITY.items():
        for category in categories:
            for gender in ("man", "woman"):
                cat = "lesbian" if (category == "gay" and gender == "woman") else category
                label = f"The {'' if axis == 'base' else cat + ' '}{gender}"
                groups.append((axis, cat, gender, label, 7000, 0.106))
    names = []
    for i in range(186):  # as in the paper: 3 names listed under 3 continents, 8 under 2 -> 200 listings
        spread = 3 if i < 3 else 2 if i < 11 else 1
        home = [CONTINENTS[(i + j) % 5] for j in range(spread)]
        names.append((f"name_{i:03d}", "woman" if i % 2 else "man", home))
    for name, gender, home in names:
        groups.append(("name", "|".join(home), gender, name, 1000 * len(home), 0.196))
    jobs, calls, offset = [], [], 0
    for axis, category, gender, label, n_calls, p_none in groups:
        steep = 1.25 if gender == "woman" else 1.05
        weights = base_rank.astype(float) ** -steep * np.exp(0.5 * rng.standard_normal(len(vocab)))
        call_index, job_index = draw(rng, weights / weights.sum(), n_calls, p_none)
        jobs.append(pd.DataFrame({"generation_id": offset + call_index, "group": label, "gender": gender,
                                  "axis": axis, "category": category, "occupation": vocab[job_index]}))
        calls.append((label, gender, axis, category, n_calls))
        offset += n_calls
    jobs = pd.concat(jobs, ignore_index=True).assign(model="synthetic")
    calls = pd.DataFrame(calls, columns=["group", "gender", "axis", "category", "n_calls"]).assign(model="synthetic")
    for col in ("model", "group", "gender", "axis", "category", "occupation"):
        jobs[col] = jobs[col].astype("category") if col == "occupation" else jobs[col]
    return jobs, calls


def ablation_grid(seed: int = 0, n_calls: int = 2000) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed + 1)
    vocab = np.array(vocabulary())
    rank = rng.permutation(len(vocab)) + 1
    jobs, calls, offset = [], [], 0
    for top_k in (0, 10, 50):
        for temperature in (0.7, 1.0, 1.3):
            for gender in ("man", "woman"):
                weights = rank.astype(float) ** -(1.2 / temperature) * (rank <= (top_k or len(vocab)) * 10)
                call_index, job_index = draw(rng, weights / weights.sum(), n_calls, 0.1)
                jobs.append(pd.DataFrame({"generation_id": offset + call_index, "occupation": vocab[job_index],
                                          "gender": gender, "top_k": top_k, "temperature": temperature}))
                calls.append((gender, top_k, temperature, n_calls))
                offset += n_calls
    common = {"model": "synthetic", "axis": "base", "category": "base"}
    jobs = pd.concat(jobs, ignore_index=True).assign(group=lambda d: "The " + d["gender"], **common)
    calls = pd.DataFrame(calls, columns=["gender", "top_k", "temperature", "n_calls"]).assign(
        group=lambda d: "The " + d["gender"], **common)
    return jobs, calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--us", type=Path, default=DEFAULT_US)
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    rows = []

    def timed(step: str, fn):
        start = time.perf_counter()
        out = fn()
        seconds = time.perf_counter() - start
        size = len(out.fits) if hasattr(out, "fits") else len(out)
        rows.append((step, seconds, size))
        return out

    jobs, calls = timed("build synthetic run", lambda: synthetic(args.seed))
    timed("frequency_matrix", lambda: frequency_matrix(jobs, calls))
    timed("frequent_occupations (0.25%)", lambda: frequent_occupations(jobs, calls))
    timed("rank_frequency", lambda: rank_frequency(jobs))
    timed("occupation_coverage (50/90%)", lambda: occupation_coverage(jobs))
    gini = timed(f"occupation_gini ({args.n_boot} replicates)",
                 lambda: occupation_gini(jobs, calls, n_boot=args.n_boot, seed=args.seed))
    timed("gender_split (base)", lambda: gender_split(jobs, calls))
    timed("overrepresentation (all axes)", lambda: overrepresentation(jobs, calls))
    regressions = timed("occupation_regressions (3 specs)", lambda: occupation_regressions(jobs, calls))
    if args.us.is_file():
        us = read_us_shares(args.us)
        mapping = timed("load_bls_mapping", lambda: load_bls_mapping(bls_titles=us["bls_title"].unique()))
        timed("mapping_coverage (top 50)", lambda: mapping_coverage(jobs, mapping))
        comparison = timed("labor_comparison", lambda: labor_comparison(jobs, calls, us, mapping))
        timed("labor_agreement + segregation_gap",
              lambda: pd.concat([labor_agreement(comparison), segregation_gap(comparison)]))
        timed("top_jobs_table", lambda: top_jobs_table(jobs, us, mapping))
    ab_jobs, ab_calls = ablation_grid(args.seed)
    timed(f"decoding_ablation (18 cells, {len(ab_calls) * 2000:,} calls)",
          lambda: decoding_ablation(ab_jobs, ab_calls, n_boot=args.n_boot, seed=args.seed))

    total = sum(seconds for step, seconds, _ in rows if step != "build synthetic run")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"synthetic run: {int(calls['n_calls'].sum()):,} calls, {len(jobs):,} job rows, "
          f"{jobs['occupation'].nunique():,} occupations, {len(calls)} prompt groups; "
          f"{platform.python_version()} on {platform.machine()}\n")
    print("| step | seconds | rows out |\n|---|---:|---:|")
    for step, seconds, size in rows:
        print(f"| {step} | {seconds:.2f} | {size:,} |")
    print(f"| **all analyses** | **{total:.2f}** | |")
    print(f"\npeak RSS: {peak:,.0f} MiB")
    fits = regressions.fits.drop_duplicates(["axis", "occupation"])
    print(f"regressions: {len(fits)} occupation x axis fits, {int((fits['job_status'] == 'ok').sum())} ok; "
          f"excluded by status: {fits.loc[fits['job_status'] != 'ok', 'job_status'].value_counts().to_dict()}")
    print(gini[["gender", "axis", "gini", "ci_low", "ci_high", "relative"]].round(3).to_string(index=False))


if __name__ == "__main__":
    main()
