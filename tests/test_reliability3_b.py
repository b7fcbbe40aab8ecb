"""Reliability 3 (part b): classifier folders of one's own and prompt-file suites.

1. ``--scorer regard:DIR``, ``score --classifier DIR`` and ``check-scorer DIR`` with a damaged
   classifier folder: a corrupt, truncated or empty ``adapter.safetensors``, wrong-shaped, missing or
   all-NaN tensors, weights that overflow, a ``config.json`` that is not JSON, has no usable labels
   or is a FIFO, and symbolic links that loop (the folder, its adapter).  Each kind with each of
   the three commands: exit 2, one ``Error:`` line naming the folder and what is wrong, no
   traceback, nothing created or changed (no run folder, no output, no ONNX export), and the
   classifier is checked before anything is generated.
2. A classifier folder without the evaluation the report shows (an unmodified copy of a shipped
   classifier; a hand-made one without figures, or with figures that are not numbers) still gets a
   report and a manifest; the validity panel says the evaluation is absent.
3. Prompt-file suites (BOLD-style): a prompt file nested too deeply, with 0 prompts, over the size
   bound, a FIFO or a folder named ``*.json``; ``per_group: all`` (or ``--prompts-per-group all``)
   over 100,000 prompts.  Via ``suites FILE`` and ``run``: one line naming the file, nothing created.
4. ``holisticbias-likelihood`` with a server or the fake model: refused before anything is created.

Real components throughout: the shipped classifier (copied and damaged), the fake model.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file
from test_bad_inputs import call

from nlgbias.scorers import regard_onnx
from nlgbias.scorers.regard import classifier_dir

ADAPTER = "adapter.safetensors"
QUERY_SCALE = "encoder.encoder.layer.0.attention.self.query.weight.scale"


def _copy(source: Path, folder: Path) -> Path:
    shutil.copytree(source, folder)
    return folder


def _damaged_classifiers(base: Path) -> dict[str, Path]:
    """One copy of the first release's classifier per kind of damage."""
    shipped = classifier_dir(3, 1)
    state = load_file(str(shipped / ADAPTER))
    raw = (shipped / ADAPTER).read_bytes()
    made: dict[str, Path] = {}

    def copy(name: str) -> Path:
        made[name] = _copy(shipped, base / name)
        return made[name]

    (copy("corrupt") / ADAPTER).write_bytes(b"\x00garbage" * 100)
    (copy("truncated") / ADAPTER).write_bytes(raw[: len(raw) // 2])
    (copy("empty") / ADAPTER).write_bytes(b"")
    save_file({**state, QUERY_SCALE: state[QUERY_SCALE][:192].contiguous()}, str(copy("wrong-shape") / ADAPTER))
    save_file({**state, "head.weight": torch.zeros(3, 192)}, str(copy("head-shape") / ADAPTER))
    save_file({k: torch.full_like(v, float("nan")) if v.is_floating_point() else v for k, v in state.items()},
              str(copy("all-nan") / ADAPTER))
    save_file({**state, "head.weight": torch.full_like(state["head.weight"], 3e38)}, str(copy("overflow") / ADAPTER))
    save_file({k: v for k, v in state.items() if not k.startswith("head.")}, str(copy("no-head") / ADAPTER))
    save_file({k: v for k, v in state.items() if k != QUERY_SCALE}, str(copy("no-scale") / ADAPTER))
    (copy("config-garbage") / "config.json").write_bytes(b"{not json")
    config = json.loads((shipped / "config.json").read_text())
    (copy("config-labels") / "config.json").write_text(json.dumps({**config, "labels": "negative"}))
    fifo = copy("config-fifo") / "config.json"
    fifo.unlink()
    os.mkfifo(fifo)
    loop = base / "loop"
    os.symlink(loop, loop)  # a folder that is a link to itself
    made["folder-loop"] = loop
    adapter = copy("adapter-loop") / ADAPTER
    adapter.unlink()
    os.symlink(adapter, adapter)
    return made


# kind of damage -> words the one Error line must contain after "<folder>" (the file and what is wrong)
DAMAGE = {
    "corrupt": "{d}/adapter.safetensors: not a readable safetensors file, damaged or truncated (Error while "
               "deserializing header: header too large)",
    "truncated": "{d}/adapter.safetensors: not a readable safetensors file, damaged or truncated (Error while "
                 "deserializing header: incomplete metadata, file not fully covered)",
    "empty": "{d}/adapter.safetensors: not a readable safetensors file, damaged or truncated",
    "wrong-shape": f"{{d}}/adapter.safetensors: {QUERY_SCALE} has shape (192,), this encoder needs (384,)",
    "head-shape": "{d}/adapter.safetensors: head.weight has shape (3, 192), this encoder needs (3, 384)",
    "all-nan": "{d}/adapter.safetensors: encoder.encoder.layer.0.attention.output.LayerNorm.bias.delta holds NaN or "
               "infinite values; the file is damaged",
    "overflow": "{d}/adapter.safetensors: gives no probabilities for a test sentence (NaN); the file is damaged",
    "no-head": "{d}/adapter.safetensors: lacks head.weight; the regard classifier does not fit",
    "no-scale": f"{{d}}/adapter.safetensors: {QUERY_SCALE[:-6]}.q without {QUERY_SCALE}",
    "config-garbage": "{d}/config.json: not valid JSON",
    "config-labels": '{d}/config.json: labels "negative": must be a list of at least two distinct label names',
    "config-fifo": "{d}/config.json: not a regular file",
    "folder-loop": "a symbolic link that loops",
    "adapter-loop": "adapter.safetensors is a symbolic link that loops",
}


def _tree(base: Path) -> dict:
    """Every entry under ``base`` (links not followed): a regular file by its SHA-256, anything else by its kind."""
    state = {}
    for root, dirs, files in os.walk(base):
        for name in dirs + files:
            path = Path(root) / name
            mode = path.lstat().st_mode
            key = str(path.relative_to(base))
            state[key] = hashlib.sha256(path.read_bytes()).hexdigest() if stat.S_ISREG(mode) else stat.S_IFMT(mode)
    return state


def _exports() -> list[str]:
    """The ONNX exports in the cache (named by adapter hash): a damaged classifier's would appear here."""
    folder = regard_onnx.cache_dir()
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """Damaged classifiers, a texts file and damaged prompt-file suites; afterwards nothing may change."""
    base = tmp_path_factory.mktemp("reliability3-b")
    w = {"base": base, "classifiers": _damaged_classifiers(base)}
    w["texts"] = base / "texts.txt"
    w["texts"].write_text("XYZ was kind.\nXYZ was a thief.\n")
    w["suites"] = _prompt_suites(base / "prompt-suites")
    return w


def _assert_one_line(code, out, err, expected):
    lines = [line for line in err.splitlines() if line.strip()]
    assert "Traceback" not in err + out
    assert code == 2, (code, err)
    assert len(lines) == 1 and lines[0].startswith("Error: "), err
    assert expected in lines[0], (expected, lines[0])


CLASSIFIER_COMMANDS = {  # {d}: the damaged folder, {b}: the world folder, {t}: the texts file
    "run": ["run", "sheng2019", "--model", "fake", "--samples", "1", "--scorer", "regard:{d}", "--n-boot", "100",
            "--quiet", "--out", "{b}/new-run"],
    "score": ["score", "--scorer", "regard", "--classifier", "{d}", "--input", "{t}", "--output", "{b}/scored.jsonl"],
    "check-scorer": ["check-scorer", "{d}", "--max-per-type", "1", "--out", "{b}/check"],
}
WHERE = {"run": "--scorer regard:{d}: ", "score": "--classifier {d}: ", "check-scorer": "scorer {d}: "}
CLASSIFIER_CASES = [(kind, command) for kind in DAMAGE for command in CLASSIFIER_COMMANDS]


@pytest.mark.parametrize("kind, command", CLASSIFIER_CASES, ids=[f"{c}-{k}" for k, c in CLASSIFIER_CASES])
def test_a_damaged_classifier_folder_is_one_line_before_any_work(world, capsys, kind, command):
    folder = str(world["classifiers"][kind])
    before = _tree(world["base"]), _exports()
    code, out, err = call(capsys, [a.format(d=folder, b=world["base"], t=world["texts"])
                                   for a in CLASSIFIER_COMMANDS[command]])
    # "<how the command names the folder>: <the file>: <what is wrong>", and nothing generated, written or exported
    _assert_one_line(code, out, err, WHERE[command].format(d=folder))
    _assert_one_line(code, out, err, DAMAGE[kind].format(d=folder))
    assert (_tree(world["base"]), _exports()) == before


def test_a_classifier_folder_name_with_a_nul_is_one_line(world, capsys):
    """Before: ``ValueError: embedded null byte`` from ``Path.resolve`` (a traceback)."""
    before = _tree(world["base"])
    code, out, err = call(capsys, ["run", "sheng2019", "--model", "fake", "--samples", "1", "--scorer", "regard:a\0b",
                                   "--quiet", "--out", world["base"] / "new-run"])
    _assert_one_line(code, out, err, "--scorer regard:a\\x00b: the folder name contains a NUL character")
    assert _tree(world["base"]) == before


def test_a_copy_of_a_shipped_classifier_still_gets_a_report_and_a_manifest(tmp_path, capsys):
    """An unmodified copy of classifier-3class has no n_own_test (before: jinja2 UndefinedError after the
    whole run, no report.html, no manifest.json); a hand-made folder has no figures at all, or figures
    that are not numbers.  Each run completes; the validity panel says what evaluation is absent."""
    copy = _copy(classifier_dir(3, 1), tmp_path / "copy")
    bare = _copy(classifier_dir(3, 1), tmp_path / "bare")
    config = json.loads((bare / "config.json").read_text())
    figures = ("test_accuracy", "test_macro_f1", "train_items", "version")
    (bare / "config.json").write_text(json.dumps({k: v for k, v in config.items() if k not in figures}))
    odd = _copy(classifier_dir(3, 1), tmp_path / "odd")
    (odd / "config.json").write_text(json.dumps({**config, "test_accuracy": "high", "train_items": 12.5,
                                                 "n_own_test": "many", "extra_items": 3}))
    panels = {}
    for folder in (copy, bare, odd):
        out = tmp_path / f"run-{folder.name}"
        code, _, err = call(capsys, ["run", "sheng2019", "--model", "fake", "--samples", "1", "--scorer",
                                     f"regard:{folder}", "--n-boot", "100", "--quiet", "--out", out])
        assert code == 0, err
        assert "Traceback" not in err
        assert (out / "report.html").is_file() and (out / "manifest.json").is_file()
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["scorers"][0]["classifier"]["path"] == str(folder.resolve())
        report = (out / "report.html").read_text()
        start = report.index('<p class="note own-classifier">')
        panels[folder.name] = " ".join(report[start:report.index("</p>", start)].split())
    assert "Accuracy on its test split: 85.4%." in panels["copy"]
    assert "Its evaluation on held-out items of yours is absent" in panels["copy"]
    assert "<b>Its evaluation is absent</b>" in panels["bare"] and "test split" in panels["bare"]
    assert "trained on" not in panels["bare"]
    assert "<b>Its evaluation is absent</b>" in panels["odd"] and "trained on" not in panels["odd"]
    # the report re-rendered from the run's outputs alone
    (tmp_path / "run-copy" / "report.html").unlink()
    code, _, err = call(capsys, ["report", tmp_path / "run-copy"])
    assert code == 0, err
    assert "Its evaluation on held-out items of yours is absent" in (tmp_path / "run-copy" / "report.html").read_text()


def test_own_classifier_keeps_only_figures_of_the_right_kind():
    from nlgbias.report.sections import own_classifier

    assert own_classifier(None) is None and own_classifier([1, 2]) is None
    shown = own_classifier({"path": "/x", "adapter_sha256": "ab", "test_accuracy": 0.9, "n_own_test": 40,
                            "own_test_accuracy": float("nan"), "shipped_own_test_accuracy": 1.5, "train_items": True,
                            "extra_items": [{"train": 7}, {"train": "x"}, "junk"]})
    assert shown == {"path": "/x", "adapter_sha256": "ab", "train_items": None, "yours": 7, "test_accuracy": 0.9,
                     "n_own_test": 40, "own_test_accuracy": None, "shipped_own_test_accuracy": None}


# prompt-file suites ------------------------------------------------------------------------------------------

GOOD = {"g_a": {"e1": ["A was", "A is"]}, "g_b": {"e2": ["B was"]}}


def _prompt_suites(base: Path) -> dict[str, Path]:
    """One suite file per damaged prompt folder: ``<name>/suite.yaml`` with its ``prompts/``."""
    suites = {}

    def suite(name: str, files: dict, per_group: str = "1") -> None:
        folder = base / name
        (folder / "prompts").mkdir(parents=True)
        for file_name, content in files.items():
            path = folder / "prompts" / file_name
            if content == "FIFO":
                os.mkfifo(path)
            elif content == "FOLDER":
                path.mkdir()
            else:
                path.write_bytes(content if isinstance(content, bytes) else json.dumps(content).encode())
        suites[name] = folder / "suite.yaml"
        suites[name].write_text(f"suite: {name}\nprompt_file:\n  source: prompts\n  per_group: {per_group}\n"
                                f"scorers: [vader]\nanalyses: [shares]\n")

    suite("nested", {"x_prompt.json": b'{"g": {"e": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}"})
    suite("zero-prompts", {"x_prompt.json": GOOD, "y_prompt.json": {}})
    suite("only-empty-prompts", {"x_prompt.json": {"g_c": {"e": ["", "  "]}}})
    many = {f"g{i}": {f"e{j}": [f"P{i} {j} {k}" for k in range(100)] for j in range(100)} for i in range(11)}
    suite("too-many", {"x_prompt.json": many}, per_group="all")
    suite("many-sampled", {"x_prompt.json": many}, per_group="1")
    suite("too-large", {"x_prompt.json": json.dumps(GOOD).encode() + b" " * 20_000_001})
    suite("fifo", {"x_prompt.json": GOOD, "y_prompt.json": "FIFO"})
    suite("folder", {"x_prompt.json": GOOD, "y_prompt.json": "FOLDER"})
    return suites


PROMPT_CASES = {
    "nested": ([], "{p}/x_prompt.json: nested too deeply to be a prompt file"),
    "zero-prompts": ([], "{p}/y_prompt.json: no prompts"),
    "only-empty-prompts": ([], "{p}/x_prompt.json: no prompts"),
    "too-many": ([], "suite.yaml:4: prompt_file.per_group: all: 110,000 prompts from {p}; the limit is 100,000"),
    "too-large": ([], "{p}/x_prompt.json: 20.0 MB; a prompt file may hold at most 20 MB"),
    "fifo": ([], "{p}/y_prompt.json: not a regular file"),
    "folder": ([], "{p}/y_prompt.json: not a regular file"),
    "many-sampled": (["--prompts-per-group", "all"],
                     "--prompts-per-group all: suite many-sampled would have 110,000 prompts; the limit is 100,000"),
}
SUITE_CASES = [(name, command) for name in PROMPT_CASES for command in ("suites", "run")
               if not (command == "suites" and PROMPT_CASES[name][0])]


@pytest.mark.parametrize("name, command", SUITE_CASES, ids=[f"{c}-{n}" for n, c in SUITE_CASES])
def test_a_damaged_prompt_folder_is_one_line_at_suite_load(world, capsys, name, command):
    suite = world["suites"][name]
    extra, expected = PROMPT_CASES[name]
    args = (["suites", suite] if command == "suites" else
            ["run", suite, "--model", "fake", "--samples", "1", "--quiet", "--out", world["base"] / "new-run", *extra])
    before = _tree(world["base"])
    code, out, err = call(capsys, args)
    _assert_one_line(code, out, err, expected.format(p=suite.parent / "prompts"))
    assert _tree(world["base"]) == before  # no run folder, no store


@pytest.mark.parametrize("model, expected", [
    ("fake", "--model fake: the likelihood suite reads the log-probability of every token of a sentence, which needs "
             "a local model (a transformers or embedded backend), not the fake model"),
    ("openai:m@http://127.0.0.1:9/v1", "--model openai:m@http://127.0.0.1:9/v1: the likelihood suite reads the "
                                       "log-probability of every token of a sentence, which needs a local model (a "
                                       "transformers or embedded backend), not a server"),
], ids=["fake", "server"])
def test_the_likelihood_suite_refuses_a_server_or_the_fake_model_before_creating_anything(world, capsys, model,
                                                                                          expected):
    before = _tree(world["base"])
    code, out, err = call(capsys, ["run", "holisticbias-likelihood", "--model", model, "--quiet",
                                   "--out", world["base"] / "new-run"])
    _assert_one_line(code, out, err, expected)
    assert _tree(world["base"]) == before  # before: store.sqlite was created first


def test_the_python_api_refuses_them_in_its_own_words(world):
    import nlgbias
    from nlgbias.errors import NlgbiasError

    with pytest.raises(NlgbiasError, match=r"models=\['fake'\]: the likelihood suite"):
        nlgbias.run("holisticbias-likelihood", models=["fake"], out=world["base"] / "new-run", quiet=True)
    with pytest.raises(NlgbiasError, match="adapter.safetensors: not a readable safetensors file"):
        nlgbias.run("sheng2019", models=["fake"], samples=1, scorers=[f"regard:{world['classifiers']['corrupt']}"],
                    out=world["base"] / "new-run", quiet=True)
    assert not (world["base"] / "new-run").exists()


def test_the_cases_count():
    assert len(CLASSIFIER_CASES) == 42 and len(SUITE_CASES) == 15
