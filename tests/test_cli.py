"""The command line: one-line errors with exit code 2 for every bad input, help with examples."""

from __future__ import annotations

import json
import os

import pandas as pd
import pytest

import nlgbias

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
    assert code == 2 and err.startswith(f"Error: endpoint {url}/completions: gave up after 2 attempts; last error: "
                                        "returned malformed JSON (JSONDecodeError at byte")
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


def test_score_input_lines_end_at_newlines_only(capsys, tmp_path):
    """U+2028 inside a text does not split it; CRLF line ends are read as line ends."""
    source = tmp_path / "in.txt"
    source.write_text("XYZ was kind\u2028and generous.\r\nXYZ was a liar.\n", encoding="utf-8", newline="")
    target = tmp_path / "out.jsonl"
    code, _, err = call(capsys, "score", "--scorer", "vader", "--input", str(source), "--output", str(target))
    assert code == 0, err
    rows = [json.loads(line) for line in target.read_text(encoding="utf-8").split("\n") if line]
    assert [r["text"] for r in rows] == ["XYZ was kind\u2028and generous.", "XYZ was a liar."]


def test_score_jsonl_carries_the_score_the_python_api_returns(capsys, tmp_path):
    texts = ["XYZ was a kind and generous neighbour.", "XYZ was a liar and a thief.", "", "XYZ worked as a clerk."]
    source = tmp_path / "in.txt"
    source.write_text("\n".join(texts) + "\n", encoding="utf-8")
    target = tmp_path / "out.jsonl"
    code, _, err = call(capsys, "score", "--scorer", "vader", "--input", str(source), "--output", str(target))
    assert code == 0, err
    rows = [json.loads(line) for line in target.read_text().splitlines()]
    api = nlgbias.score(texts, scorer="vader")
    assert [r["score"] for r in rows] == pytest.approx(api["score"].tolist(), abs=1e-12)
    assert rows[0]["score"] == pytest.approx(rows[0]["scores"]["compound"], abs=1e-12)  # vader's main number
    assert rows[2]["label"] == "neutral" and rows[2]["score"] == 0.0


def test_score_input_errors(capsys, tmp_path):
    missing = tmp_path / "missing.txt"
    code, _, err = call(capsys, "score", "--scorer", "vader", "--input", str(missing), "--output", str(tmp_path / "o.jsonl"))
    assert_one_line_error(code, err, f"--input {missing}: file not found")
    latin = tmp_path / "latin.txt"
    latin.write_bytes("fine line\nna\u00efve caf\u00e9\n".encode("latin-1"))
    code, _, err = call(capsys, "score", "--scorer", "vader", "--input", str(latin), "--output", str(tmp_path / "o.jsonl"))
    assert_one_line_error(code, err, f"--input {latin}:2: not UTF-8 text")
    code, _, err = call(capsys, "score", "--scorer", "vadr", "--input", str(latin), "--output", str(tmp_path / "o.jsonl"))
    assert_one_line_error(code, err, "--scorer vadr: unknown scorer; did you mean vader? available: occupation, regard, regard-v1, regard-v2, regard-v3, regard4, regard4-v1, regard4-v2, textblob, vader, vader-bold")


def test_regard_scores_masked_text_with_probabilities(capsys, tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("The woman was a brilliant and kind doctor.\nThe woman was a thief and a liar.\n\n", encoding="utf-8")
    target = tmp_path / "o.jsonl"
    code, _, err = call(capsys, "score", "--scorer", "regard", "--input", str(source), "--output", str(target),
                        "--mask", "The woman")
    assert code == 0, err
    rows = [json.loads(line) for line in target.read_text().splitlines()]
    assert [r["label"] for r in rows] == ["positive", "negative", None]
    assert rows[0]["text"] == "The woman was a brilliant and kind doctor."  # the input, not the masked text
    probs = rows[0]["scores"]
    assert set(probs) == {"negative", "neutral", "positive", "truncated"}
    assert abs(probs["negative"] + probs["neutral"] + probs["positive"] - 1) < 1e-5
    assert rows[2]["scores"] == {"empty": True} and rows[2]["score"] is None
    assert rows[0]["score"] == pytest.approx(probs["positive"] - probs["negative"], abs=1e-9)
    assert "3 texts scored with regard; 1 empty" in err


def test_regard_is_reported_unavailable_not_faked(tmp_path):
    from nlgbias.errors import ScorerUnavailable
    from nlgbias.scorers.regard import RegardScorer

    with pytest.raises(ScorerUnavailable, match="scorer regard: not available: no classifier at"):
        RegardScorer(tmp_path / "nowhere")


def test_models_suites_and_scorers_listings(capsys):
    code, out, _ = call(capsys, "models")
    assert code == 0 and "smollm2-135m" in out and "[installed]" in out and "gemma3-270m" in out
    code, out, _ = call(capsys, "suites")
    assert code == 0 and "sheng2019 " in out and "60 prompts" in out
    code, out, _ = call(capsys, "suites", "sheng2019")
    prompts = [line for line in out.splitlines() if not line.startswith("#")]
    assert code == 0 and len(prompts) == 60 and "The straight person started working as" in out
    code, out, _ = call(capsys, "scorers")
    assert code == 0 and "vader      available      VADER sentiment" in out
    assert "regard     available      regard (negative/neutral/positive)" in out


def test_scorers_lists_descriptions_without_loading_a_model():
    import subprocess
    import sys

    script = ("import sys; from nlgbias.cli import main; main(['scorers']); "
              "print('loaded:', sorted(m for m in ('torch', 'transformers', 'vaderSentiment', 'textblob') "
              "if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    lines = done.stdout.splitlines()
    assert lines[-1] == "loaded: []"
    from nlgbias.scorers import REGISTRY

    names = [line.split()[0] for line in lines[:-1] if not line.startswith(" ")]
    assert names == sorted(REGISTRY)
    assert all(len(line) <= 100 for line in lines)


def test_scorers_says_why_one_cannot_run(capsys, monkeypatch, tmp_path):
    import nlgbias.scorers.regard as regard
    from nlgbias.scorers import REGISTRY, describe_scorers

    monkeypatch.setattr(regard, "classifier_dir", lambda _classes=3, _release=1: tmp_path)
    monkeypatch.setitem(REGISTRY, "zz-missing", "nlgbias.scorers.nosuch:Scorer")
    table = describe_scorers().set_index("name")
    assert not table.loc["regard", "available"] and table.loc["vader", "available"]
    assert table.loc["regard", "reason"].startswith(f"scorer regard: not available: no classifier at {tmp_path}")
    assert table.loc["zz-missing", "reason"].startswith("cannot import nlgbias.scorers.nosuch")
    code, out, _ = call(capsys, "scorers")
    assert code == 0 and "regard     not available  regard (negative" in out
    assert " ".join(out.split()).count(f"[scorer regard: not available: no classifier at {tmp_path}") == 1


@pytest.mark.parametrize("flags, message", [
    (["--temperature", "0,1.0"], "--temperature 0: must be a number > 0 (and at most 100)"),
    (["--temperature", "hot"], "--temperature hot: must be a number > 0"),
    (["--top-k", "-5"], "--top-k -5: must be a whole number >= 0 (0 = no top-k)"),
    (["--top-k", "1.5"], "--top-k 1.5: must be a whole number >= 0 (0 = no top-k)"),
])
def test_ablation_grid_errors(capsys, tmp_path, flags, message):
    code, _, err = call(capsys, "ablate", "--model", "fake", "--out", str(tmp_path / "a"), *flags)
    assert_one_line_error(code, err, message)


def test_ablation_measures_each_grid_cell(capsys, tmp_path):
    code, out, err = call(capsys, "ablate", "kirk2021-identity", "--model", "fake", "--top-k", "10,0",
                          "--temperature", "1.0", "--samples", "4", "--out", str(tmp_path / "a"), "--quiet")
    assert code == 0, err
    table = pd.read_csv(tmp_path / "a" / "ablation.csv")
    assert sorted(set(table["top_k"])) == [0, 10] and set(table["gender"]) == {"man", "woman"}
    assert (table["n_calls"] == 14 * 4).all()  # 14 prompts per gender, 4 samples each
    assert (tmp_path / "a" / "top_k=10,temperature=1" / "report.html").is_file()


def test_names_suite_from_a_csv(capsys, tmp_path):
    names = tmp_path / "names.csv"
    names.write_text("name,gender,continent\nAmina,F,Africa\nMia,female,Europe\nMia,F,Oceania\nJuan,M,Americas\n")
    target = tmp_path / "names.yaml"
    code, _, err = call(capsys, "names-suite", str(names), "--out", str(target))
    assert code == 0, err
    from nlgbias.suites import expand_suite, load_suite

    prompts = expand_suite(load_suite(target))
    assert prompts["prompt"].tolist() == ["Amina works as a", "Mia works as a", "Juan works as a"]
    assert prompts.set_index("group").loc["Mia", "continent"] == "Europe|Oceania"
    names.write_text("name,sex\nAmina,F\n")
    code, _, err = call(capsys, "names-suite", str(names), "--out", str(target))
    assert_one_line_error(code, err, f"{names}: missing column 'gender'; need name, gender, continent (got name, sex)")
    names.write_text("name,gender,continent\nAmina,F,Africa\nAmina,M,Asia\n")
    code, _, err = call(capsys, "names-suite", str(names), "--out", str(target))
    assert_one_line_error(code, err, f"{names}:3: Amina is listed as both woman and man")


def test_a_bls_mapping_with_an_unknown_title_fails_before_generating(capsys, tmp_path):
    mapping = tmp_path / "map.csv"
    mapping.write_text("job,bls_title,gendered,source\nnurse,Registred nurses,false,mine\n")
    out = tmp_path / "o"
    code, _, err = call(capsys, "run", "kirk2021-identity", "--model", "fake", "--samples", "1", "--out", str(out),
                        "--bls-mapping", str(mapping), "--quiet")
    assert_one_line_error(code, err, f"{mapping}:2: BLS title 'Registred nurses' is not in us_rows_data.csv; "
                                     "did you mean 'Registered nurses'?")
    assert not (out / "store.sqlite").exists()


def test_score_says_when_the_input_was_empty(capsys, tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    code, _, err = call(capsys, "score", "--scorer", "vader", "--input", str(empty), "--output", str(tmp_path / "o.jsonl"))
    assert code == 0
    assert err.strip() == f"--input {empty} is empty: 0 texts scored with vader -> {tmp_path / 'o.jsonl'}"
    assert (tmp_path / "o.jsonl").read_text() == ""


def test_suites_lists_the_real_prompt_count_of_pronoun_suites(capsys):
    code, out, _ = call(capsys, "suites")
    counts = {line.split()[0]: int(line.split()[1]) for line in out.splitlines() if not line.startswith(" ")}
    # every prompt in its three perturbations (orig, replace, delete): 5,151 templates and 359 sentences
    assert counts["vig2020-templates"] == 3 * 5151
    assert counts["natural-sentences"] == 3 * 359
    assert counts["pronouns"] == 3 * (5151 + 359)
    assert counts["sheng2019"] == 60


def test_suites_wraps_descriptions_and_describes_one_suite(capsys):
    from nlgbias.suites import load_suite

    code, out, _ = call(capsys, "suites")
    assert code == 0 and max(len(line) for line in out.splitlines()) <= 100
    described, name = {}, ""
    for line in out.splitlines():
        name = line[:28].strip() or name
        described[name] = described.get(name, "") + " " + line[43:].strip()
    for name, text in described.items():
        assert " ".join(text.split()) == " ".join(load_suite(name).description.split())  # whole, not cut
    code, out, _ = call(capsys, "suites", "pronouns")
    suite = load_suite("pronouns")
    header = [line[2:] for line in out.splitlines() if line.startswith("# ")]
    prompts = [line for line in out.splitlines() if not line.startswith("#")]
    assert code == 0 and len(prompts) == 3 * (5151 + 359)
    assert " ".join(header) == f"pronouns (version {suite.version}, {len(prompts)} prompts): " + " ".join(
        suite.description.split())
