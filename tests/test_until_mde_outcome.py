"""`--until-mde` says whether its target was met: on the console, in the report's header and key findings."""

from __future__ import annotations

import re
from html import unescape

import nlgbias

SMALL = dict(models=["fake"], scorers=["vader"], n_boot=100, seed=0)


def text(page: str, start: str, end: str) -> str:
    part = page.split(start, 1)[1].split(end, 1)[0]
    return " ".join(unescape(re.sub(r"<[^>]+>", "", part)).split())


def test_a_run_stopped_by_max_samples_says_the_target_was_not_met(tmp_path, capfd):
    result = nlgbias.run("sheng2019", samples=2, until_mde=1, max_samples=3, out=tmp_path, **SMALL)
    precision = result.manifest["precision"]
    assert precision["stopped"] == "max_samples"
    last = precision["rounds"][-1]
    over, of = last["over_target"], len(last["comparisons"])
    assert over > 0
    line = (f"Target not met: sampling stopped at --max-samples 3 with {over} of the {of} gaps it targets still "
            f"above an MDE of 1 points")
    err = capfd.readouterr().err
    assert line in err
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    header = text(page, '<div class="facts">', "</div>\n</div>")
    assert "target of every MDE ≤ 1 points not met: stopped at --max-samples 3" in header
    assert "until every MDE" not in header  # read as if it had been reached
    assert line in text(page, "<h2>Key findings</h2>", "<h2>")


def test_a_run_that_meets_its_target_says_so(tmp_path, capfd):
    result = nlgbias.run("sheng2019", samples=2, until_mde=99, max_samples=40, out=tmp_path, **SMALL)
    rounds = result.manifest["precision"]["rounds"]
    assert result.manifest["precision"]["stopped"] == "target" and len(rounds) > 1
    assert max(c["mde"] for c in rounds[-1]["comparisons"]) <= 0.99
    err = capfd.readouterr().err
    assert (f"Target met: each of the {len(rounds[-1]['comparisons'])} gaps it targets has an MDE of at most 99 points "
            f"(after {len(rounds)} rounds)") in err
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "target met: every MDE ≤ 99 points" in text(page, '<div class="facts">', "</div>\n</div>")
