"""The occupations section at small n: what cannot be estimated is one line, not tables of "0 fitted / nan"."""

from __future__ import annotations

import re
from html import unescape

import pandas as pd
import pytest

import nlgbias
from nlgbias.analyses import report_sections
from nlgbias.report.folder import rerender_report


@pytest.fixture(scope="module")
def small_kirk(tmp_path_factory):
    out = tmp_path_factory.mktemp("kirk") / "run"
    nlgbias.run("kirk2021-identity", models=["fake"], samples=2, out=out, quiet=True, n_boot=100)
    return out


def section(page: str, *, tags: bool = True) -> str:
    part = page.split("<h2>Occupations</h2>", 1)[1]
    part = re.sub(r"<svg.*?</svg>", "", part, flags=re.S)
    return unescape(part if tags else re.sub(r"<[^>]+>", " ", part))


def test_regressions_without_a_fit_are_one_line(small_kirk):
    summary = pd.read_csv(small_kirk / "occupation_regression_summary.csv")
    excluded = pd.read_csv(small_kirk / "occupation_regression_excluded.csv")
    none = summary[summary["n_ok"] == 0]
    assert len(none) == len(summary) > 30  # at 2 samples per prompt no job can be fitted
    text = section((small_kirk / "report.html").read_text(encoding="utf-8"))
    reasons = excluded.groupby("status")["n_jobs"].sum()
    line = (f"Not estimable at this n: {len(none)} of {len(summary)} terms "
            f"({', '.join(dict.fromkeys('fake ' + a for a in none['axis']))}) have no job whose fit succeeded "
            f"(excluded fits: {', '.join(f'{s.replace(chr(95), chr(32))} {n}' for s, n in reasons.items())})")
    assert line in " ".join(re.sub(r"<[^>]+>", " ", text).split())
    regressions = text.split("Logistic regressions per job", 1)[1].split("<h3>", 1)[0]
    assert "<table>" not in regressions  # no rows of 0 fitted / excluded / nan
    assert "nan" not in text.lower().replace("nanny", "")


def test_coverage_names_only_cells_with_jobs_and_their_counts(small_kirk):
    coverage = pd.read_csv(small_kirk / "occupation_coverage.csv")
    gini = pd.read_csv(small_kirk / "occupation_gini.csv")
    text = " ".join(section((small_kirk / "report.html").read_text(encoding="utf-8"), tags=False).split())
    line = text.split("Top jobs that cover 50% and 90% of a cell's mentions:", 1)[1].split(".", 1)[0]
    cells = {}
    for (gender, axis), cell in coverage.groupby(["gender", "axis"], sort=False):
        need = dict(zip(cell["level"], cell["jobs_needed"]))
        cells[f"fake {gender}·{axis}"] = f"{need[0.5]} (50%), {need[0.9]} (90%) of {cell['n_jobs'].iloc[0]}"
    assert line.strip() == "; ".join(f"{k}: {v}" for k, v in cells.items())
    empty = gini[gini["n_mentions"] == 0]
    assert len(empty) > 0
    named = ", ".join(f"fake {g}·{a}" for g, a in zip(empty["gender"], empty["axis"]))
    assert f"No job named, so no Gini or coverage: {named}." in text
    table = text.split("relative to base man", 1)[1].split("No job named", 1)[0]
    assert "nan" not in table and table.count("fake ") == len(gini) - len(empty)


def test_the_small_run_re_renders(small_kirk):
    before = (small_kirk / "report.html").read_text(encoding="utf-8")
    rerender_report(small_kirk, sections=report_sections())  # None in metrics.json (no Gini, no relative) was a TypeError
    assert (small_kirk / "report.html").read_text(encoding="utf-8") == before
