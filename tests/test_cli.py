"""The command line: one-line errors with exit code 2 for every bad input, help with examples."""

from __future__ import annotations

import json
import os

import pytest

from fakeserver import FakeServer
from nlgbias.cli import cli, main
from nlgbias.store import RunStore


def call(capsys, *args):
    """Run ``nlgbias args``; return (exit code, stdout, stderr)."""
    with pytest.raises(SystemExit) as caught:
        main(list(args))
        raise SystemExit(0)
    out, err = capsys.readouterr()
    return caught.value.code, out, err


def assert_one_line_error(code, err, expected):
    assert code == 2
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines == [f"Error: {expected}"]


def test_every_command_has_help_with_an_example(capsys):
    for name, command in cli.commands.items():
        assert command.help and "Example:" in command.help, name
        code, out, _ = call(capsys, name, "--help")
        assert code == 0 and "Example:" in out and f"nlgbias {name}" in out


def test_unknown_model_alias(capsys, tmp_path):
    code, _, err = call(capsys, "run", "--model", "smollm2", "--out", str(tmp_path / "o"), "--quiet")
    assert_one_line_error(code, err, "--model smollm2: unknown model alias; did you mean smollm2-135m? available: "
                                     "smollm2-135m, gemma3-270m (or a path, a hub id like org/name or hf:name, or openai:NAME)")


def test_missing_model_path(capsys, tmp_path):
    code, _, err = call(capsys, "run", "--model", "./nope/model.gguf", "--out", str(tmp_path / "o"), "--quiet")
    assert_one_line_error(code, err, "--model ./nope/model.gguf: file not found")


def test_hub_id_without_a_hub(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    code, _, err = call(capsys, "run", "--model", "someorg/somemodel", "--samples", "1", "--out",
                        str(tmp_path / "o"), "--quiet")
    assert_one_line_error(code, err, "model someorg/somemodel: looks like a Hugging Face hub id, but no model hub is "
                                     "reachable and it is not in the local cache; use a local folder or GGUF file, or an "
                                     "embedded model: smollm2-135m, gemma3-270m")


def test_suite_yaml_errors(capsys, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("suite: x\ngroups:\n  - {id: a, text: A, attributes: {axis: g}}\n  - {id: a, text: B, attributes: {axis: g}}\n"
                   "templates:\n  - {id: t, context: c, text: no placeholder}\n")
    code, _, err = call(capsys, "run", str(bad), "--model", "fake", "--out", str(tmp_path / "o"), "--quiet")
    assert_one_line_error(code, err, f"{bad}:4: groups[1].id: duplicate group 'a' (first defined as groups[0])")
    bad.write_text("suite: x\ngroups:\n  - {id: a, text: A, attributes: {axis: g}}\n"
                   "templates:\n  - {id: t, context: c, text: no placeholder}\n")
    code, _, err = call(capsys, "run", str(bad), "--model", "fake", "--out", str(tmp_path / "o"), "--quiet")
    assert_one_line_error(code, err, f"{bad}:5: templates[0].text: has no {{group}} placeholder")


@pytest.mark.parametrize("value", ["0", "-3"])
def test_samples_must_be_positive(capsys, tmp_path, value):
    code, _, err = call(capsys, "run", "--model", "fake", "--samples", value, "--out", str(tmp_path / "o"), "--quiet")
    assert_one_line_error(code, err, f"--samples {value}: must be a whole number of at least 1")


def test_samples_must_be_a_number(capsys, tmp_path):
    code, _, err = call(capsys, "run", "--samples", "many", "--out", str(tmp_path / "o"))
    assert_one_line_error(code, err, "Invalid value for '--samples': 'many' is not a valid integer. (see: nlgbias run --help)")


def test_out_is_a_file_or_not_writable(capsys, tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("x")
    code, _, err = call(capsys, "run", "--model", "fake", "--out", str(afile), "--quiet")
    assert_one_line_error(code, err, f"--out {afile}: is a file; give a folder")
    code, _, err = call(capsys, "run", "--model", "fake", "--out", str(afile / "sub"), "--quiet")
    assert_one_line_error(code, err, f"--out {afile / 'sub'}: cannot create or write this folder (Not a directory)")
    if os.geteuid() != 0:  # root may write anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        code, _, err = call(capsys, "run", "--model", "fake", "--out", str(locked), "--quiet")
        assert_one_line_error(code, err, f"--out {locked}: cannot create or write this folder (Permission denied)")


def test_bad_sampling_flag(capsys, tmp_path):
    code, _, err = call(capsys, "run", "--model", "fake", "--top-p", "0", "--out", str(tmp_path / "o"), "--quiet")
    assert_one_line_error(code, err, "--top-p: top_p must be in (0, 1], got 0.0")


def endpoint_case(capsys, tmp_path, script, *extra):
    out = tmp_path / "o"
    code, _, err = call(capsys, "run", "--model", "fake", "--samples", "1", "--out", str(out), "--quiet")
    assert code == 0
    with RunStore(out / "store.sqlite") as store:
        before = store.count_generations()
    with FakeServer(script) as server:
        url = server.url
        code, _, err = call(capsys, "run", "--model", "fake", "--model", f"openai:m@{url}", "--samples", "1",
                            "--out", str(out), "--quiet", "--max-retries", "1", *extra)
    with RunStore(out / "store.sqlite") as store:
        assert store.count_generations() >= before  # nothing already stored is lost
    return code, err, url


def test_endpoint_times_out(capsys, tmp_path):
    code, err, url = endpoint_case(capsys, tmp_path, [("sleep", 2.0)] * 4, "--timeout", "0.3", "--concurrency", "1",
                                   "--batch-size", "1")
    assert_one_line_error(code, err, f"endpoint {url}/completions: gave up after 2 attempts; last error: no reply within 0.3 s")


def test_endpoint_returns_malformed_json(capsys, tmp_path):
    code, err, url = endpoint_case(capsys, tmp_path, [("bad_json",)] * 200, "--concurrency", "1")
    assert code == 2 and err.startswith(f"Error: endpoint {url}/completions: returned malformed JSON (JSONDecodeError at byte")
    assert len(err.strip().splitlines()) == 1


def test_endpoint_refuses(capsys, tmp_path):
    with FakeServer() as server:
        url = server.url
    code, _, err = call(capsys, "run", "--model", f"openai:m@{url}", "--samples", "1", "--out", str(tmp_path / "o"),
                        "--quiet", "--max-retries", "0")
    assert_one_line_error(code, err, f"endpoint {url}/completions: gave up after 1 attempts; last error: cannot connect "
                                     "(Connection refused)")


def test_score_command_writes_jsonl(capsys, tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("XYZ was a kind and generous neighbour.\nXYZ was a liar and a thief.\n\nXYZ worked as a clerk.\n",
                      encoding="utf-8")
    target = tmp_path / "out.jsonl"
    code, _, err = call(capsys, "score", "--scorer", "vader", "--input", str(source), "--output", str(target))
    assert code == 0, err
    rows = [json.loads(line) for line in target.read_text().splitlines()]
    assert [r["label"] for r in rows] == ["positive", "negative", "neutral", "neutral"]
    assert rows[2]["text"] == "" and set(rows[0]["scores"]) == {"compound", "neg", "neu", "pos"}


def test_score_input_errors(capsys, tmp_path):
    missing = tmp_path / "missing.txt"
    code, _, err = call(capsys, "score", "--scorer", "vader", "--input", str(missing), "--output", str(tmp_path / "o.jsonl"))
    assert_one_line_error(code, err, f"--input {missing}: file not found")
    latin = tmp_path / "latin.txt"
    latin.write_bytes("fine line\nna\u00efve caf\u00e9\n".encode("latin-1"))
    code, _, err = call(capsys, "score", "--scorer", "vader", "--input", str(latin), "--output", str(tmp_path / "o.jsonl"))
    assert_one_line_error(code, err, f"--input {latin}:2: not UTF-8 text")
    code, _, err = call(capsys, "score", "--scorer", "vadr", "--input", str(latin), "--output", str(tmp_path / "o.jsonl"))
    assert_one_line_error(code, err, "--scorer vadr: unknown scorer; did you mean vader? available: occupation, regard, textblob, vader")


def test_regard_is_reported_unavailable_not_faked(capsys, tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("XYZ was a thief.\n")
    code, _, err = call(capsys, "score", "--scorer", "regard", "--input", str(source), "--output", str(tmp_path / "o.jsonl"))
    assert code == 2 and err.startswith("Error: scorer regard: not available yet")
    assert not (tmp_path / "o.jsonl").exists()


def test_models_suites_and_scorers_listings(capsys):
    code, out, _ = call(capsys, "models")
    assert code == 0 and "smollm2-135m" in out and "[installed]" in out and "gemma3-270m" in out
    code, out, _ = call(capsys, "suites")
    assert code == 0 and "sheng2019 " in out and "60 prompts" in out
    code, out, _ = call(capsys, "suites", "sheng2019")
    assert code == 0 and len(out.splitlines()) == 60 and "The straight person started working as" in out
    code, out, _ = call(capsys, "scorers")
    assert code == 0 and "vader      available" in out and "regard     not available" in out
