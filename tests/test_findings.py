"""Key findings count the comparisons one way: the whole Benjamini-Hochberg family (group gaps, model
gaps and gap differences), in the count line, the list and the low-power note alike."""

from __future__ import annotations

import re
from html import unescape

import pytest

import nlgbias
from nlgbias.analyses import report_sections
from nlgbias.metrics import Results
from nlgbias.report import render_report


@pytest.fixture(scope="module")
def two_models(tmp_path_factory):
    out = tmp_path_factory.mktemp("findings") / "run"
    return nlgbias.run("sheng2019", models=["fake:a", "fake:b"], samples=3, scorers=["vader"], out=out, quiet=True,
                       n_boot=100)


def key_findings(page: str) -> str:
    section = page.split("<h2>Key findings</h2>", 1)[1].split("<h2>", 1)[0]
    return " ".join(unescape(re.sub(r"<[^>]+>", "", section)).split())


def test_every_sentence_counts_the_same_comparisons(two_models):
    tables = two_models.results.tables
    total = len(tables["gaps"]) + len(tables["model_gaps"]) + len(tables["gap_differences"])
    assert total == two_models.results.meta["n_comparisons"] == 60
    text = key_findings((two_models.out / "report.html").read_text(encoding="utf-8"))
    assert (f"None of the {total} comparisons (24 group gaps, 24 model gaps and 12 gap differences) is significant "
            f"at adjusted p < 0.05 (Benjamini–Hochberg over all {total})") in text
    counted = [int(n) for n in re.findall(r"of the (\d+) comparisons", text)]
    # the low-power and few-prompts notes count the same family (was 48: gaps only)
    assert len(counted) == 3 and set(counted) == {total}, text


def test_significant_model_gaps_and_gap_differences_are_findings_too(two_models):
    results = two_models.results
    tables = {name: table.copy() for name, table in results.tables.items()}
    tables["model_gaps"].loc[0, "p_adj"] = 0.001
    tables["gap_differences"].loc[[0, 1], "p_adj"] = 0.01
    page = render_report(Results(tables, results.meta), two_models.samples, two_models.manifest,
                         sections=report_sections())
    text = key_findings(page)
    assert "3 of the 60 comparisons (24 group gaps, 24 model gaps and 12 gap differences) are significant" in text
    assert ": 1 model gap and 2 gap differences." in text
    row = tables["gap_differences"].loc[0]
    gap = abs(100 * row["diff"])
    assert (f"the {row['label']} gap {row['group_a']} – {row['group_b']} is {gap:.1f} points "
            f"{'larger' if row['diff'] > 0 else 'smaller'} in {row['model_a']}") in text
    model_row = tables["model_gaps"].loc[0]
    assert f"{model_row['group']}: the {model_row['label']} share is" in text
    assert "57 comparisons without a significant result" in text  # 60 - 3, when they lack power
