"""Kept answers and consistent outputs: server faults, a run killed among another run's files,
an emptied store.  Counted and explained in docs/reliability.md.

Server scenarios run the real OpenAI-compatible backend against tests/fakeserver.py, which
answers every request with a text derived from (prompt, seed), so a stored row can be checked
against what the server sent.  Every scenario asserts that each answered request is stored.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

import nlgbias
from fakeserver import FakeServer
from nlgbias.cli import main

SAMPLES = 2  # sheng2019: 60 prompts -> 120 requests, one default batch of 120


def call(capsys, *args):
    with pytest.raises(SystemExit) as caught:
        main([str(a) for a in args])
        raise SystemExit(0)
    out, err = capsys.readouterr()
    return caught.value.code, out, err


def stored(folder: Path) -> dict[tuple[str, int], str]:
    """(prompt, seed) -> continuation of every stored sample."""
    with sqlite3.connect(f"file:{folder / 'store.sqlite'}?mode=ro", uri=True) as db:
        return {(p, s): c for p, s, c in db.execute("SELECT prompt, seed, continuation FROM generations")}


def server_run(capsys, url, out, *extra):
    return call(capsys, "run", "sheng2019", "--model", f"openai:served@{url}", "--samples", SAMPLES, "--scorer",
                "vader", "--n-boot", "100", "--quiet", "--out", out, *extra)


def assert_every_answer_stored(server: FakeServer, out: Path) -> dict:
    rows = stored(out)
    answered = {(b["prompt"], b["seed"]): server.answer(b)["choices"][0]["text"] for b in server.answered}
    assert len(rows) == len(answered)
    # the server gets seed % 2**31; each stored row is exactly what the server answered for it
    assert {(p, s % 2 ** 31): c for (p, s), c in rows.items()} == answered
    return rows


def test_a_server_that_answers_100_requests_then_fails_keeps_all_100(capsys, tmp_path):
    out = tmp_path / "o"
    with FakeServer([("ok",)] * 100 + [("status", 500)] * 1000) as server:
        code, _, err = server_run(capsys, server.url, out, "--max-retries", "1", "--concurrency", "4")
    assert code == 2 and err.startswith(f"Error: endpoint {server.url}/completions: gave up after 2 attempts; "
                                        "last error: HTTP 500: injected 500")
    assert len(err.strip().splitlines()) == 1
    assert len(server.answered) == 100
    assert_every_answer_stored(server, out)  # at the default --batch-size 120; before the fix: 0 rows


def test_resuming_after_server_failures_requests_only_what_is_missing(capsys, tmp_path):
    out = tmp_path / "o"
    with FakeServer([("ok",)] * 70 + [("status", 503)] * 1000) as server:
        code, _, _ = server_run(capsys, server.url, out, "--max-retries", "0")
        assert code == 2 and len(server.answered) == 70
        assert_every_answer_stored(server, out)
        server.script.clear()  # the server recovers
        server.requests.clear()
        code, _, err = server_run(capsys, server.url, out)
    assert code == 0, err
    assert len(server.requests) == 120 - 70
    assert len(stored(out)) == 120
    # each sample is the server's answer for its own (prompt, seed), as in an uninterrupted run
    rows = stored(out)
    assert all(text == server.answer({"prompt": p, "seed": seed % 2 ** 31})["choices"][0]["text"]
               for (p, seed), text in rows.items())
    assert len({seed for _, seed in rows}) == 120


def test_malformed_bodies_are_retried_and_the_run_completes(capsys, tmp_path):
    out = tmp_path / "o"
    with FakeServer([("ok",)] * 30 + [("bad_json",)] * 2) as server:
        code, _, err = server_run(capsys, server.url, out, "--max-retries", "2", "--concurrency", "1")
    assert code == 0, err
    assert len(server.requests) == 120 + 2
    assert_every_answer_stored(server, out)
    assert len(stored(out)) == 120


def test_malformed_bodies_for_good_keep_what_was_answered(capsys, tmp_path):
    out = tmp_path / "o"
    with FakeServer([("ok",)] * 40 + [("bad_json",)] * 1000) as server:
        code, _, err = server_run(capsys, server.url, out, "--max-retries", "1", "--concurrency", "3")
    assert code == 2 and "returned malformed JSON" in err and server.url in err
    assert len(server.answered) == 40
    assert_every_answer_stored(server, out)


def test_stalls_past_a_short_timeout_are_retried(capsys, tmp_path):
    out = tmp_path / "o"
    with FakeServer([("ok",)] * 10 + [("sleep", 1.0)] * 3) as server:
        code, _, err = server_run(capsys, server.url, out, "--timeout", "0.3", "--max-retries", "2",
                                  "--concurrency", "2")
    assert code == 0, err
    assert len(stored(out)) == 120
    assert len(server.requests) == 123  # three stalled requests, each asked again


def test_a_stalled_server_keeps_every_answer_it_gave(capsys, tmp_path):
    out = tmp_path / "o"
    with FakeServer([("ok",)] * 25 + [("sleep", 2.0)] * 1000) as server:
        code, _, err = server_run(capsys, server.url, out, "--timeout", "0.2", "--max-retries", "0",
                                  "--concurrency", "2")
        assert code == 2 and err.strip().endswith("last error: no reply within 0.2 s")
        answered = [b for b in server.answered]
    assert len(answered) >= 25
    rows = stored(out)
    assert len(rows) == 25  # the stalled answers arrived after the client left: not stored, not lost
    assert {(p, s % 2 ** 31) for p, s in rows} <= {(b["prompt"], b["seed"]) for b in answered}


def test_429_with_retry_after_is_honoured_and_nothing_is_lost(capsys, tmp_path):
    out = tmp_path / "o"
    with FakeServer([("ok",)] * 5 + [("status", 429, "1")] * 2) as server:
        start = time.monotonic()
        code, _, err = server_run(capsys, server.url, out, "--concurrency", "1")
        waited = time.monotonic() - start
    assert code == 0, err
    assert waited >= 2.0  # two Retry-After: 1 waits, although the backoff alone would be shorter
    assert len(server.requests) == 122
    assert_every_answer_stored(server, out)


# --- two runs in one folder -----------------------------------------------------------------

KILL_AFTER_METRICS = """
import os, signal, sys
from nlgbias.metrics import results
write = results.Results.write
def write_then_die(self, out):
    write(self, out)
    os.kill(os.getpid(), signal.SIGKILL)  # the moment the issue names: metrics.json replaced, nothing else
results.Results.write = write_then_die
from nlgbias.cli import main
main(sys.argv[1:])
"""


def output_hashes(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())
            if p.is_file() and not p.name.startswith("store.sqlite")}


def test_a_run_killed_among_another_runs_outputs_never_leaves_them_mixed(tmp_path):
    out = tmp_path / "o"
    args_a = ["run", "sheng2019", "--model", "fake", "--samples", "2", "--scorer", "vader", "--n-boot", "200",
              "--quiet", "--out", str(out)]
    args_b = [("500" if a == "200" else a) for a in args_a]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(nlgbias.__file__).parents[1]),
                                                        os.environ.get("PYTHONPATH", "")])}
    first = subprocess.run([sys.executable, "-m", "nlgbias", *args_a], env=env, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    a_outputs = output_hashes(out)
    a_metrics = json.loads((out / "metrics.json").read_text())

    killed = subprocess.run([sys.executable, "-c", KILL_AFTER_METRICS, *args_b], env=env, capture_output=True,
                            text=True)
    assert killed.returncode == -signal.SIGKILL
    b_metrics = json.loads((out / "metrics.json").read_text())
    assert b_metrics != a_metrics  # B's metrics.json replaced A's (n_boot 500: other intervals) ...
    assert not (out / "manifest.json").exists()  # ... and nothing vouches for the folder any more

    again = subprocess.run([sys.executable, "-m", "nlgbias", *args_a], env=env, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert json.loads((out / "metrics.json").read_text()) == a_metrics
    rebuilt = output_hashes(out)
    for name, digest in a_outputs.items():
        if name not in ("report.html", "manifest.json"):  # these two show the invocation's own times
            assert rebuilt[name] == digest, name
    assert manifest["output_sha256"] == {k: v for k, v in rebuilt.items() if k != "manifest.json"}
    assert manifest["statistics"]["n_boot"] == 200


def test_an_output_changed_behind_the_manifest_is_rebuilt(tmp_path):
    options = dict(models=["fake"], samples=1, scorers=["vader"], n_boot=100, quiet=True, out=tmp_path)
    nlgbias.run("sheng2019", **options)
    original = (tmp_path / "shares.csv").read_bytes()
    (tmp_path / "shares.csv").write_text("group,share\nsomeone,1.0\n")
    again = nlgbias.run("sheng2019", **options)
    assert again.rebuilt == ["shares.csv", "manifest.json"]
    assert (tmp_path / "shares.csv").read_bytes() == original


# --- an emptied store ---------------------------------------------------------------------------

def test_a_store_truncated_to_0_bytes_is_refused_until_force(capsys, tmp_path):
    args = ["run", "sheng2019", "--model", "fake", "--samples", "1", "--scorer", "vader", "--n-boot", "100", "--quiet",
            "--out", tmp_path]
    assert call(capsys, *args)[0] == 0
    (tmp_path / "store.sqlite").write_bytes(b"")
    code, _, err = call(capsys, *args)
    assert code == 2
    assert err.strip() == (f"Error: {tmp_path / 'store.sqlite'}: the run store is empty (0 bytes), so whatever it held "
                           "is gone; rerun with --force to start over in this folder, or give a new --out")
    assert (tmp_path / "store.sqlite").stat().st_size == 0
    code, _, err = call(capsys, *args, "--force")
    assert code == 0, err
    assert len(stored(tmp_path)) == 60


def test_the_library_refuses_it_too(tmp_path):
    from nlgbias.errors import StoreError

    (tmp_path / "store.sqlite").write_bytes(b"")
    with pytest.raises(StoreError, match=r"the run store is empty .* rerun with force=True to start over in this "
                                         r"folder, or give a new out=$"):
        nlgbias.run("sheng2019", models=["fake"], samples=1, scorers=["vader"], out=tmp_path, quiet=True)


# --- one style of progress output -------------------------------------------------------------

def test_the_gguf_conversion_bar_is_silenced_and_only_inside_the_block():
    import io

    import transformers.modeling_gguf_pytorch_utils as gguf_utils

    from nlgbias.models.hf import no_library_bars

    def draw():
        sink = io.StringIO()
        for _ in gguf_utils.tqdm(range(3), desc="Converting and de-quantizing GGUF tensors...", file=sink):
            pass
        return sink.getvalue()

    with no_library_bars():
        assert draw() == ""
    assert "Converting and de-quantizing" in draw()


def test_api_errors_use_api_words():
    from nlgbias.errors import InputError

    with pytest.raises(InputError, match=r"^timeout=-1: must be more than 0 seconds$"):
        nlgbias.run("sheng2019", models=["fake"], backend_options=nlgbias.models.BackendOptions(timeout=-1))
    with pytest.raises(InputError, match=r"^models=\['openai:x@127.0.0.1:9/v1'\]: '127.0.0.1:9/v1' is not a server URL"):
        nlgbias.run("sheng2019", models=["openai:x@127.0.0.1:9/v1"])
    with pytest.raises(InputError, match=r"^device=bogus: unknown device"):
        nlgbias.run("sheng2019", models=["fake"], backend_options=nlgbias.models.BackendOptions(device="bogus"))


@pytest.mark.parametrize("call, api, cli", [
    (lambda out: nlgbias.run("sheng2019", models=["smollm2"], out=out),
     "models=['smollm2']: unknown model alias; did you mean smollm2-135m?", ["--model", "smollm2"]),
    (lambda out: nlgbias.run("sheng2019", models=[], out=out), "models=: give at least one model", None),
    (lambda out: nlgbias.run("sheng2019", models=["fake", "fake"], out=out),
     "models=: the same model is given twice (fake, fake)", ["--model", "fake", "--model", "fake"]),
    (lambda out: nlgbias.run("sheng2019", models=["fake"], samples=0, out=out),
     "samples=0: must be a whole number of at least 1", ["--model", "fake", "--samples", "0"]),
    (lambda out: nlgbias.run("kirk2021-identity", models=["fake"], scorers=["vader"], out=out),
     "scorers=: the occupations analysis of suite kirk2021-identity needs the occupation scorer; add "
     "scorers=['occupation']", ["kirk2021-identity", "--model", "fake", "--scorer", "vader"]),
    (lambda _out: nlgbias.score(["x"], scorer="vaderr"), "scorer='vaderr': unknown scorer; did you mean vader?", None),
])
def test_the_same_error_reads_in_python_words_from_python_and_in_flags_from_the_command_line(
        tmp_path, capsys, call, api, cli):
    from nlgbias.cli import main
    from nlgbias.errors import NlgbiasError

    with pytest.raises(NlgbiasError) as caught:
        call(tmp_path / "out")
    assert str(caught.value).startswith(api) and "--" not in str(caught.value)
    if cli is not None:
        with pytest.raises(SystemExit):
            main(["run", *cli, "--out", str(tmp_path / "o")])
        err = capsys.readouterr().err
        flags = {"models=['smollm2']": "--model smollm2", "models=": "--model", "samples=0": "--samples 0",
                 "scorers=['occupation']": "--scorer occupation", "scorers=": "--scorer"}
        expected = api
        for words, flag in flags.items():
            expected = expected.replace(words, flag)
        assert err.startswith(f"Error: {expected}"), err
