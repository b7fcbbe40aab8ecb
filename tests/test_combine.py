"""One report over several runs: pooled where the settings match, side by side where they do not."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest

import nlgbias
from nlgbias.cli import main
from nlgbias.errors import InputError
from nlgbias.metrics import Results

SMALL = dict(samples=2, scorers=["vader"], n_boot=100, seed=0, quiet=True)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Three real runs of the fake model (fake:a, fake:b, and both together), one with more samples per
    prompt and one with another seed."""
    base = tmp_path_factory.mktemp("runs")
    nlgbias.run("sheng2019", models=["fake:a"], out=base / "a", **SMALL)
    nlgbias.run("sheng2019", models=["fake:b"], out=base / "b", **SMALL)
    nlgbias.run("sheng2019", models=["fake:a", "fake:b"], out=base / "ab", **SMALL)
    nlgbias.run("sheng2019", models=["fake:c"], out=base / "c3", **{**SMALL, "samples": 3})
    nlgbias.run("sheng2019", models=["fake:c"], out=base / "c-seed1", **{**SMALL, "seed": 1})
    return base


def folder_digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def assert_same_tables(got: Results, want: Results) -> None:
    assert list(got.tables) == list(want.tables)
    for name, table in want.tables.items():
        pd.testing.assert_frame_equal(got.tables[name], table, check_exact=True, obj=name)


def test_two_runs_with_the_same_settings_give_the_tables_of_one_run_with_both_models(runs, tmp_path):
    before = {name: folder_digest(runs / name) for name in ("a", "b")}
    combined = nlgbias.report_runs([runs / "a", runs / "b"], out=tmp_path / "both")
    assert len(combined.parts) == 1
    joint = Results.read(runs / "ab")
    assert_same_tables(Results.read(tmp_path / "both"), joint)  # row by row, every table
    assert "gap_differences" in joint.tables and not joint.table("gap_differences").empty
    for name in ("shares", "gaps", "model_gaps", "gap_differences"):
        assert (tmp_path / "both" / f"{name}.csv").read_bytes() == (runs / "ab" / f"{name}.csv").read_bytes()
    assert (tmp_path / "both" / "metrics.json").read_bytes() == (runs / "ab" / "metrics.json").read_bytes()
    assert {name: folder_digest(runs / name) for name in ("a", "b")} == before  # nothing of the runs changed
    html = (tmp_path / "both" / "report.html").read_text()
    assert "Runs in this report" in html and "Gap differences between models" in html
    assert "fake:a – fake:b" in html  # model gaps across the two runs
    settings = pd.read_csv(tmp_path / "both" / "runs.csv")
    assert settings["part"].tolist() == [1, 1] and settings["models"].tolist() == ["fake:a", "fake:b"]
    manifest = json.loads((tmp_path / "both" / "manifest.json").read_text())
    assert [r["run_id"] for r in manifest["parts"][0]["runs"]] == settings["run_id"].tolist()


def test_min_n_and_confidence_rethreshold_without_generating_again(runs, tmp_path):
    before = folder_digest(runs / "a")
    nlgbias.report_runs([runs / "a"], out=tmp_path / "strict", min_n=5, confidence=0.9)
    fresh = nlgbias.run("sheng2019", models=["fake:a"], out=tmp_path / "fresh", **{**SMALL, "min_n": 5},
                        confidence=0.9)
    assert_same_tables(Results.read(tmp_path / "strict"), Results.read(fresh.out))
    default = Results.read(runs / "a")
    assert default.shares["small_n"].all()  # n = 10 < 30 at the run's own min_n
    assert not Results.read(tmp_path / "strict").shares["small_n"].any()  # n = 10 >= 5
    assert (Results.read(tmp_path / "strict").shares["ci_high"] <= default.shares["ci_high"]).all()
    assert folder_digest(runs / "a") == before
    html = (tmp_path / "strict" / "report.html").read_text()
    assert "90% CI" in html and "95% CI" not in html


def test_runs_with_different_settings_are_shown_side_by_side_never_pooled(runs, tmp_path):
    combined = nlgbias.report_runs([runs / "a", runs / "b", runs / "c-seed1"], out=tmp_path / "mixed",
                                   title="Three runs <draft>")
    assert len(combined.parts) == 2
    assert_same_tables(Results.read(tmp_path / "mixed" / "part-1"), Results.read(runs / "ab"))
    assert_same_tables(Results.read(tmp_path / "mixed" / "part-2"), Results.read(runs / "c-seed1"))
    for part in ("part-1", "part-2"):  # no comparison between fake:c and the others
        model_gaps = Results.read(tmp_path / "mixed" / part).model_gaps
        assert not ({"fake:c"} & set(model_gaps.get("model_a", [])) and {"fake:a", "fake:b"} & set(model_gaps.get("model_b", [])))
    settings = pd.read_csv(tmp_path / "mixed" / "runs.csv")
    assert settings["part"].tolist() == [1, 1, 2]
    assert settings["seed"].tolist() == [0, 0, 1]
    html = (tmp_path / "mixed" / "report.html").read_text()
    assert "<h1>Three runs &lt;draft&gt;</h1>" in html and "<draft>" not in html
    assert "Part 1: sheng2019 · fake:a, fake:b" in html and "Part 2: sheng2019 · fake:c" in html
    runs_table = html.split("Runs in this report", 1)[1].split("</table>", 1)[0]
    row = next(r for r in runs_table.split("<tr") if r.startswith(' class="sig"><td>seed'))
    assert "differs" in row and [c.split("</td>")[0] for c in row.split("<td>")[2:]] == ["0", "0", "1"]
    assert "differs" not in next(r for r in runs_table.split("<tr") if "<td>temperature" in r)


def test_runs_with_unequal_samples_per_prompt_are_compared_and_the_report_says_so(runs, tmp_path):
    combined = nlgbias.report_runs([runs / "a", runs / "c3"], out=tmp_path / "unequal")
    assert len(combined.parts) == 1  # 2 and 3 samples per prompt: one analysis
    pooled = Results.read(tmp_path / "unequal")
    for run, model in (("a", "fake:a"), ("c3", "fake:c")):  # each model's cells are its own run's, row for row
        own = Results.read(runs / run).shares.reset_index(drop=True)
        mine = pooled.shares[pooled.shares["model"] == model].reset_index(drop=True)
        pd.testing.assert_frame_equal(mine, own, check_exact=True)
    model_gaps = pooled.model_gaps
    assert set(zip(model_gaps["model_a"], model_gaps["model_b"])) == {("fake:a", "fake:c")}
    assert set(model_gaps["n_a"]) == {10} and set(model_gaps["n_b"]) == {15}  # 5 prompts x 2, x 3 samples
    differences = pooled.table("gap_differences")
    assert not differences.empty and set(differences["n_a1"]) == {10} and set(differences["n_b1"]) == {15}
    assert pooled.meta["n_comparisons"] == len(pooled.gaps) + len(model_gaps) + len(differences)
    settings = pd.read_csv(tmp_path / "unequal" / "runs.csv")
    assert settings["part"].tolist() == [1, 1] and settings["samples_per_prompt"].tolist() == [2, 3]
    manifest = json.loads((tmp_path / "unequal" / "manifest.json").read_text())
    assert manifest["parts"][0]["unequal_samples"] == [
        {"model": "fake:a", "run_id": settings["run_id"][0], "samples_per_prompt": 2},
        {"model": "fake:c", "run_id": settings["run_id"][1], "samples_per_prompt": 3}]
    html = (tmp_path / "unequal" / "report.html").read_text()
    assert "<b>Samples per prompt</b>2 (fake:a), 3 (fake:c): unequal" in html
    assert "The models were run with different samples per prompt (fake:a: 2, fake:c: 3)." in html
    assert "unequal-samples" not in (runs / "ab" / "report.html").read_text()


def test_the_command_line_writes_the_same_report(runs, tmp_path, capsys):
    with pytest.raises(SystemExit) as caught:
        main(["report", str(runs / "a"), str(runs / "b"), "--out", str(tmp_path / "cli"), "--title", "Two"])
        raise SystemExit(0)
    out, err = capsys.readouterr()
    assert caught.value.code == 0, err
    assert out == f"2 runs in 1 part (settings side by side in {tmp_path / 'cli' / 'runs.csv'}); " \
                  f"report: {tmp_path / 'cli' / 'report.html'}\n"
    assert_same_tables(Results.read(tmp_path / "cli"), Results.read(runs / "ab"))
    assert "<h1>Two</h1>" in (tmp_path / "cli" / "report.html").read_text()


def test_the_same_model_in_two_runs_with_the_same_settings_is_refused(runs, tmp_path):
    with pytest.raises(InputError, match=r"model fake:a is also in .*a, with the same settings; give one of the two runs"):
        nlgbias.report_runs([runs / "a", runs / "ab"], out=tmp_path / "dup")
    assert not (tmp_path / "dup").exists()


def test_api_errors_use_python_wording(runs, tmp_path):
    with pytest.raises(InputError, match=r"^min_n=0: must be a whole number of at least 1$"):
        nlgbias.report_runs([runs / "a"], out=tmp_path / "x", min_n=0)
    with pytest.raises(InputError, match=r"^out='.*a': inside the run folder"):
        nlgbias.report_runs([runs / "a"], out=runs / "a")
