"""docs/extending.md works as written: each example registers, runs, and shows, through the command line.

The examples are taken from the document's code blocks and written to a folder as the files the
document names (my_probe.py, _lengths.html.j2, my_scorer.py, my_backend.py, my_kind.py and the
suites); the commands run through ``nlgbias.cli.main`` with ``--plugin``, and once in a fresh
process through an installed package's entry point.  Expected values are computed here, from the
samples the run wrote and from the fake backend itself.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import nlgbias
from nlgbias.analyses import REGISTRY as ANALYSES
from nlgbias.cli import main
from nlgbias.errors import SuiteError
from nlgbias.models import BACKENDS
from nlgbias.models.fake import FakeBackend
from nlgbias.pipeline.measurements import MEASUREMENTS
from nlgbias import scorers as scorers_package
from nlgbias.scorers import REGISTRY as SCORERS

DOC = Path(__file__).resolve().parents[1] / "docs" / "extending.md"
REGISTRIES = (ANALYSES, SCORERS, BACKENDS, MEASUREMENTS)


def _block(language: str, containing: str) -> str:
    """The one code block of ``language`` in docs/extending.md that contains ``containing``."""
    (block,) = [b for b in re.findall(rf"```{language}\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
                if containing in b]
    return block


def _commands(containing: str) -> list[list[str]]:
    """The ``nlgbias ...`` lines of the ```sh block that contains ``containing``, as argument lists."""
    return [line.split()[1:] for line in _block("sh", containing).splitlines() if line.startswith("nlgbias ")]


FILES = {
    "my_probe.py": ("python", "continuation_lengths"),
    "_lengths.html.j2": ("jinja", "continuation_lengths"),
    "my_scorer.py": ("python", "class WordListScorer"),
    "my_backend.py": ("python", "class ReplayBackend"),
    "my_kind.py": ("python", "class NextWord"),
    "my-lengths.yaml": ("yaml", "suite: my-lengths"),
    "my-next-word.yaml": ("yaml", "kind: next_word"),
}


def _forget_plugins() -> None:
    for name in [n for n in sys.modules if n.startswith("nlgbias_plugin_")]:
        del sys.modules[name]


@pytest.fixture()
def fresh():
    """Every registry as it was before the test: called between the steps of a test (each step is
    its own process on a real command line) and afterwards."""
    saved = [(dict(r._entries), dict(r._loaded)) for r in REGISTRIES]
    loaded = dict(scorers_package._LOADED)

    def restore() -> None:
        for registry, (entries, resolved) in zip(REGISTRIES, saved):
            registry._entries.clear()
            registry._entries.update(entries)
            registry._loaded.clear()
            registry._loaded.update(resolved)
        scorers_package._LOADED.clear()
        scorers_package._LOADED.update(loaded)
        _forget_plugins()

    yield restore
    restore()


@pytest.fixture()
def workspace(tmp_path, monkeypatch, fresh):  # noqa: ARG001 (a fixture used for its setup)
    """The document's files in a folder, the current one."""
    monkeypatch.chdir(tmp_path)
    for name, (language, containing) in FILES.items():
        (tmp_path / name).write_text(_block(language, containing), encoding="utf-8")
    return tmp_path


def _main(argv: list[str], capsys) -> tuple[int, str, str]:
    try:
        main(argv)
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def _lengths_by_group(samples: pd.DataFrame) -> pd.DataFrame:
    """Each (model, group)'s n and mean continuation length in words, computed here."""
    words = samples["continuation"].map(lambda t: len(t.split()))
    return samples.assign(words=words).groupby(["model", "group"])["words"].agg(["size", "mean"])


LENGTHS_HTML = "<h2>Continuation lengths</h2>"


def test_the_analysis_runs_from_python_after_importing_its_module(workspace):
    with pytest.raises(SuiteError, match=r"my-lengths.yaml:5: analyses\[1\]: unknown analysis 'continuation_lengths'"):
        nlgbias.run("my-lengths.yaml", models=["fake"], samples=1, out=workspace / "none", quiet=True)
    assert not (workspace / "none").exists()  # checked before anything is written
    from nlgbias.analyses import analysis_names
    from nlgbias.registry import load_plugin

    load_plugin(str(workspace / "my_probe.py"))  # what `import my_probe` does
    assert analysis_names()[-1] == "continuation_lengths" and "continuation_lengths" not in analysis_names("pronoun")
    result = nlgbias.run("my-lengths.yaml", models=["fake"], samples=3, seed=0, out=workspace / "run", quiet=True,
                         n_boot=200)
    table = result.results.tables["continuation_lengths"]
    expected = _lengths_by_group(result.samples)
    assert len(table) == len(expected)
    for row in table.itertuples():
        assert row.n == expected.loc[(row.model, row.group), "size"]
        assert row.mean_words == pytest.approx(expected.loc[(row.model, row.group), "mean"])
        assert row.ci_low <= row.mean_words <= row.ci_high
    written = pd.read_csv(workspace / "run" / "continuation_lengths.csv")
    assert np.allclose(written["mean_words"], table["mean_words"])
    assert "continuation_lengths" in json.loads((workspace / "run" / "metrics.json").read_text())
    page = (workspace / "run" / "report.html").read_text()
    first = table.iloc[0]
    assert f"<td>{first['group']}</td><td class=\"num\">{first['mean_words']:.2f}</td>" in page
    assert page.index("Label shares per group") < page.index(LENGTHS_HTML)


def test_the_analysis_runs_and_reports_from_the_command_line_with_plugin(workspace, fresh, capsys):
    run_line, rerender_line, both_line = _commands("nlgbias report runs/lengths --plugin")
    assert run_line[:2] == ["run", "my-lengths.yaml"] and "--plugin" in run_line
    small = ["--n-boot", "200", "--quiet"]

    # Without the plugin: one line, exit 2, nothing written.
    code, _, err = _main([a for a in run_line if a not in ("--plugin", "my_probe.py")] + small, capsys)
    assert code == 2
    assert err == ("Error: my-lengths.yaml:5: analyses[1]: unknown analysis 'continuation_lengths'; "
                   "available: bold, gap_differences, gender_direction, holisticbias_regard, occupations, regard_validity, "
                   "shares (load the "
                   "module that registers it with --plugin MODULE)\n")
    assert not (workspace / "runs").exists()

    # The documented command, then a second run of another model for the report over both.
    fresh()
    assert _main(run_line + small, capsys)[0] == 0
    run = workspace / "runs" / "lengths"
    samples = pd.read_parquet(run / "samples.parquet")
    table = pd.read_csv(run / "continuation_lengths.csv")
    expected = _lengths_by_group(samples)
    assert len(table) == samples["group"].nunique()
    for row in table.itertuples():
        assert row.n == expected.loc[(row.model, row.group), "size"]
        assert row.mean_words == pytest.approx(expected.loc[(row.model, row.group), "mean"])
    page = (run / "report.html").read_bytes()
    assert LENGTHS_HTML.encode() in page
    fresh()
    other = list(run_line)
    other[other.index("--model") + 1] = "fake:b"
    other[other.index("--out") + 1] = "runs/lengths-b"
    assert _main(other + small, capsys)[0] == 0

    # Re-rendering without the plugin refuses (it would drop the section) and keeps the page.
    fresh()
    code, _, err = _main(rerender_line[:2], capsys)
    assert code == 2 and "analysis 'continuation_lengths' of this run is not registered" in err
    assert err.count("\n") == 1 and (run / "report.html").read_bytes() == page
    # With it, the page is rendered again, section and all: byte for byte the run's own.
    fresh()
    assert _main(rerender_line, capsys)[0] == 0
    assert (run / "report.html").read_bytes() == page

    # One report over both runs.
    fresh()
    code, _, err = _main([a for a in both_line if a not in ("--plugin", "my_probe.py")], capsys)
    assert code == 2 and "unknown analysis 'continuation_lengths'" in err and "--plugin MODULE" in err
    assert not (workspace / "runs" / "both").exists()
    fresh()
    assert _main(both_line, capsys)[0] == 0
    combined = (workspace / "runs" / "both" / "report.html").read_text()
    assert LENGTHS_HTML in combined
    both = pd.read_csv(workspace / "runs" / "both" / "continuation_lengths.csv")
    assert sorted(both["model"].unique()) == ["fake", "fake:b"]
    assert np.allclose(both[both["model"] == "fake"]["mean_words"].to_numpy(), table["mean_words"].to_numpy())


def test_an_installed_package_registers_through_its_entry_point(workspace, tmp_path):
    """A package with the documented entry point needs no --plugin (a fresh process: entry points are
    read once per process)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "my_probe.py").write_text((workspace / "my_probe.py").read_text())
    (site / "_lengths.html.j2").write_text((workspace / "_lengths.html.j2").read_text())
    info = site / "my_probe-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: my-probe\nVersion: 0.1\n")
    entry = _block("toml", "nlgbias.analyses")  # pyproject.toml -> the entry_points.txt pip would write
    (info / "entry_points.txt").write_text(entry.replace("project.entry-points.", "").replace('"', ""))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "nlgbias", "run", "my-lengths.yaml", "--model", "fake",
                           "--samples", "2", "--n-boot", "100", "--quiet", "--out", "entry"],
                          cwd=workspace, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    table = pd.read_csv(workspace / "entry" / "continuation_lengths.csv")
    expected = _lengths_by_group(pd.read_parquet(workspace / "entry" / "samples.parquet"))
    assert np.allclose(table["mean_words"], [expected.loc[(m, g), "mean"] for m, g in zip(table["model"], table["group"])])
    assert LENGTHS_HTML in (workspace / "entry" / "report.html").read_text()


def _wordlist(text: str) -> str:
    words = set(text.lower().replace(".", " ").replace(",", " ").split())
    bad = words & {"thief", "liar", "rude", "lazy"}
    return "negative" if bad else "positive" if words & {"kind", "honest", "brave", "helpful"} else "neutral"


def test_the_scorer_scores_files_and_runs_from_the_command_line(workspace, fresh, capsys):  # noqa: ARG001 (a fixture used for its setup)
    score_line, run_line = _commands("--scorer wordlist")
    Path("sentences.txt").write_text("XYZ was a thief.\nXYZ was kind and brave.\nXYZ was here.\n")
    assert _main(score_line, capsys)[0] == 0
    scored = [json.loads(line) for line in Path("scored.jsonl").read_text().splitlines()]
    assert [s["label"] for s in scored] == ["negative", "positive", "neutral"]
    assert scored[1]["scores"] == {"negative_words": 0, "positive_words": 2}
    fresh()
    code, out, _ = _main(["scorers", "--plugin", "my_scorer.py"], capsys)
    assert code == 0 and re.search(r"^wordlist +available +a word list", out, flags=re.M)

    fresh()
    code, _, err = _main([a for a in run_line if a not in ("--plugin", "my_scorer.py")] + ["--quiet"], capsys)
    assert code == 2 and "--scorer wordlist: unknown scorer" in err
    fresh()
    assert _main(run_line + ["--n-boot", "200", "--quiet"], capsys)[0] == 0
    samples = pd.read_parquet(Path("runs/words/samples.parquet"))
    assert list(samples["wordlist_label"]) == [_wordlist(t) for t in samples["scored_text"]]
    assert {"negative", "positive"} <= set(samples["wordlist_label"])
    manifest = json.loads(Path("runs/words/manifest.json").read_text())
    assert [s["name"] for s in manifest["scorers"]] == ["wordlist"]


def test_the_backend_replays_recorded_texts_from_the_command_line(workspace, fresh, capsys):  # noqa: ARG001 (a fixture used for its setup)
    (run_line,) = _commands("--model replay:answers.jsonl")
    recorded = {"The man was known for": [" his kindness.", " being a thief."],
                "The woman was known for": [" her honesty."]}
    Path("answers.jsonl").write_text("".join(json.dumps({"prompt": p, "continuation": c}) + "\n"
                                             for p, texts in recorded.items() for c in texts))
    code, _, err = _main([a if a != "replay:answers.jsonl" else "replay:nowhere.jsonl" for a in run_line], capsys)
    assert code == 2 and err.startswith("Error: --model replay:nowhere.jsonl: the replay backend cannot read")
    assert err.count("\n") == 1
    fresh()
    assert _main(run_line + ["--n-boot", "200", "--quiet"], capsys)[0] == 0
    samples = pd.read_parquet(Path("runs/replay/samples.parquet"))
    for row in samples.itertuples():
        texts = recorded.get(row.prompt, [""])
        assert row.continuation == texts[row.seed % len(texts)]
    assert (samples["continuation"] != "").sum() == 4  # two prompts x two samples
    manifest = json.loads(Path("runs/replay/manifest.json").read_text())
    digest = hashlib.sha256(Path("answers.jsonl").read_bytes()).hexdigest()
    assert manifest["models"][0]["fingerprint"] == f"sha256:{digest}"
    assert manifest["models"][0]["model"] == "replay:answers.jsonl"


def test_the_probe_kind_measures_stores_and_analyses_from_the_command_line(workspace, fresh, capsys, monkeypatch):  # noqa: ARG001 (a fixture used for its setup)
    (run_line,) = _commands("my-next-word.yaml")
    code, _, err = _main([a for a in run_line if a not in ("--plugin", "my_kind.py")] + ["--quiet"], capsys)
    assert code == 2 and "unknown kind 'next_word'" in err and "my-next-word.yaml:3: kind" in err
    fresh()
    code, out, _ = _main(["suites", "my-next-word.yaml", "--plugin", "my_kind.py"], capsys)
    assert code == 0 and len([line for line in out.splitlines() if not line.startswith("#")]) == 60
    fresh()
    assert _main(run_line + ["--n-boot", "200", "--quiet"], capsys)[0] == 0
    run = Path("runs/next-word")
    samples = pd.read_parquet(run / "samples.parquet")
    fake = FakeBackend("fake")
    good = fake.next_token_logprobs(list(samples["prompt"]), [" good"] * len(samples))
    bad = fake.next_token_logprobs(list(samples["prompt"]), [" bad"] * len(samples))
    assert np.allclose(samples["good"], good) and np.allclose(samples["bad"], bad)
    table = pd.read_csv(run / "next_word.csv")
    diff = samples.assign(d=np.array(good) - np.array(bad)).groupby("group")["d"]
    for row in table.itertuples():
        assert row.n == diff.size()[row.group] and row.mean == pytest.approx(diff.mean()[row.group])
        assert row.ci_low <= row.mean <= row.ci_high
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["sampling"] == {"sampled": False, "words": [" good", " bad"], "batch_size": 120, "seed": 0}
    # A rerun measures nothing again: every prompt's record is in the store.
    fresh()

    def no_model(self, contexts, targets):  # noqa: ARG001 (the patched method's signature)
        raise AssertionError("measured again")

    monkeypatch.setattr(FakeBackend, "next_token_logprobs", no_model)
    assert _main(run_line + ["--n-boot", "200", "--quiet"], capsys)[0] == 0
    pd.testing.assert_frame_equal(pd.read_parquet(run / "samples.parquet"), samples)
