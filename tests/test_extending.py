"""docs/extending.md works as written: its toy analysis registers, runs and shows in the report."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import nlgbias
from nlgbias.analyses import REGISTRY
from nlgbias.errors import SuiteError

DOC = Path(__file__).resolve().parents[1] / "docs" / "extending.md"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)


@pytest.fixture()
def toy_analysis(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my_probe").mkdir()
    (tmp_path / "my_probe" / "_lengths.html.j2").write_text(_blocks("jinja")[0], encoding="utf-8")
    (tmp_path / "my-lengths.yaml").write_text(_blocks("yaml")[0], encoding="utf-8")
    before = dict(REGISTRY)
    with pytest.raises(SuiteError, match="unknown analysis 'continuation_lengths'"):
        nlgbias.load_suite(str(tmp_path / "my-lengths.yaml"))
    exec(compile(_blocks("python")[0], str(DOC), "exec"), {"__name__": "extending_doc"})
    yield tmp_path
    REGISTRY.clear()
    REGISTRY.update(before)


def test_the_documented_analysis_runs_and_shows_in_the_report(toy_analysis):
    from nlgbias.analyses import analysis_names

    assert analysis_names()[-1] == "continuation_lengths" and "continuation_lengths" not in analysis_names("pronoun")
    result = nlgbias.run(str(toy_analysis / "my-lengths.yaml"), models=["fake"], samples=3, seed=0,
                         out=toy_analysis / "run", quiet=True, n_boot=200)
    table = result.results.tables["continuation_lengths"]
    samples = result.samples
    assert len(table) == samples["group"].nunique()
    for row in table.itertuples():  # each group's mean, computed here independently
        words = samples.loc[samples["group"] == row.group, "continuation"].map(lambda t: len(t.split()))
        assert row.n == len(words) and row.mean_words == pytest.approx(words.mean())
        assert row.ci_low <= row.mean_words <= row.ci_high
    written = pd.read_csv(toy_analysis / "run" / "continuation_lengths.csv")
    assert np.allclose(written["mean_words"], table["mean_words"])
    assert "continuation_lengths" in json.loads((toy_analysis / "run" / "metrics.json").read_text())
    page = (toy_analysis / "run" / "report.html").read_text()
    assert "<h2>Continuation lengths</h2>" in page
    first = table.iloc[0]
    assert f"<td>{first['group']}</td><td class=\"num\">{first['mean_words']:.2f}</td>" in page
    assert page.index("Label shares per group") < page.index("<h2>Continuation lengths</h2>")

