"""One run per output folder: real ``nlgbias run`` processes started together, killed, or
killed while creating the store.  Counted and explained in docs/reliability.md.

Runs use the ``fake`` model (fast, deterministic) or the real OpenAI-compatible backend against
tests/fakeserver.py with a gate: the server holds its answers until the test opens the gate, so
a run stays in the middle of its generation as long as the test needs.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd

import nlgbias
from fakeserver import FakeServer

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(nlgbias.__file__).parents[1]),
                                                    os.environ.get("PYTHONPATH", "")])}

# Waits for the file argv[1] to exist, then runs the command line with argv[2:]: processes started
# this way reach the run at the same moment (imports done before the go).
AT_THE_GO = """
import os, sys, time
from nlgbias.cli import main
go = sys.argv.pop(1)
while not os.path.exists(go):
    time.sleep(0.005)
main(sys.argv[1:])
"""

# Dies with SIGKILL right after SQLite opens (and so creates) its first database file.
KILL_WHILE_CREATING_THE_STORE = """
import os, signal, sqlite3, sys
connect = sqlite3.connect
def connect_then_die(*args, **kwargs):
    db = connect(*args, **kwargs)
    os.kill(os.getpid(), signal.SIGKILL)
sqlite3.connect = connect_then_die
from nlgbias.cli import main
main(sys.argv[1:])
"""


def fake_args(out: Path, samples: int, n_boot: int) -> list[str]:
    return ["run", "sheng2019", "--model", "fake", "--samples", str(samples), "--scorer", "vader", "--n-boot",
            str(n_boot), "--quiet", "--out", str(out)]


def server_args(url: str, out: Path) -> list[str]:
    return ["run", "sheng2019", "--model", f"openai:served@{url}", "--samples", "2", "--scorer", "vader",
            "--n-boot", "100", "--max-retries", "0", "--quiet", "--out", str(out)]


def start(args: list[str], go: Path | None = None) -> subprocess.Popen:
    head = [sys.executable, "-c", AT_THE_GO, str(go)] if go is not None else [sys.executable, "-m", "nlgbias"]
    return subprocess.Popen([*head, *args], env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def in_use_line(out: Path, pid: int, args: list[str]) -> str:
    return f"Error: {out} is in use by run pid {pid} (nlgbias {' '.join(args)}); wait for it or use another --out"


def assert_one_run(out: Path, samples: int, n_boot: int) -> None:
    """Every output in ``out`` belongs to the run with these settings, and the manifest vouches for each."""
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["statistics"]["n_boot"] == n_boot
    assert manifest["sampling"]["samples_per_prompt"] == samples
    for name, digest in manifest["output_sha256"].items():
        assert hashlib.sha256((out / name).read_bytes()).hexdigest() == digest, name
    table = pd.read_parquet(out / "samples.parquet")
    assert len(table) == 60 * samples and set(table["run_id"]) == {manifest["run_id"]}
    assert json.loads((out / "metrics.json").read_text())["meta"]["n_boot"] == n_boot
    assert not (out / ".lock").exists()


def test_two_runs_with_different_settings_started_together_never_mix(tmp_path):
    """The issue's race, three times: one run holds the folder, the other stops at once with one line."""
    for attempt in range(3):
        out, go = tmp_path / f"o{attempt}", tmp_path / f"go{attempt}"
        settings = {"a": (2, 200), "b": (3, 500)}
        args = {key: fake_args(out, *value) for key, value in settings.items()}
        procs = {key: start(args[key], go) for key in settings}
        time.sleep(0.5)
        go.touch()
        done = {key: p.communicate(timeout=300) for key, p in procs.items()}
        codes = {key: procs[key].returncode for key in procs}
        assert sorted(codes.values()) == [0, 2], (codes, done)
        winner = next(key for key, code in codes.items() if code == 0)
        loser = "b" if winner == "a" else "a"
        assert done[loser][1].strip() == in_use_line(out, procs[winner].pid, args[winner])
        assert_one_run(out, *settings[winner])
        # the other run, rerun once the folder is free: its own outputs, nothing of the first run's
        again = subprocess.run([sys.executable, "-m", "nlgbias", *args[loser]], env=ENV, capture_output=True,
                               text=True)
        assert again.returncode == 0, again.stderr
        assert_one_run(out, *settings[loser])


def test_the_same_command_twice_at_once_is_never_taken_for_an_emptied_store(tmp_path):
    out, go = tmp_path / "o", tmp_path / "go"
    args = fake_args(out, 2, 100)
    procs = [start(args, go) for _ in range(2)]
    time.sleep(0.5)
    go.touch()
    done = [p.communicate(timeout=300) for p in procs]
    codes = sorted(p.returncode for p in procs)
    assert codes == [0, 2], done
    winner, loser = (0, 1) if procs[0].returncode == 0 else (1, 0)
    assert done[loser][1].strip() == in_use_line(out, procs[winner].pid, args)
    assert "empty" not in done[loser][1]
    assert_one_run(out, 2, 100)
    with sqlite3.connect(out / "store.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM generations").fetchone()[0] == 120


def wait_for(condition, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_a_run_in_progress_refuses_a_second_run_at_once_and_finishes(tmp_path):
    out = tmp_path / "o"
    gate = threading.Event()
    with FakeServer(gate=gate) as server:
        args = server_args(server.url, out)
        first = start(args)
        try:
            wait_for(lambda: len(server.requests) > 0)  # generating: it holds the folder
            lock = (out / ".lock").read_text().splitlines()
            assert lock == [str(first.pid), f"nlgbias {' '.join(args)}"]
            began = time.monotonic()
            second = subprocess.run([sys.executable, "-m", "nlgbias", *fake_args(out, 3, 500)], env=ENV,
                                    capture_output=True, text=True, timeout=120)
            assert second.returncode == 2
            assert second.stderr.strip() == in_use_line(out, first.pid, args)
            assert first.poll() is None and time.monotonic() - began < 60  # refused while the first one waits
            assert not server.answered
        finally:
            gate.set()
        _, err = first.communicate(timeout=300)
        assert first.returncode == 0, err
    assert_one_run(out, 2, 100)


def test_a_holder_killed_with_kill_9_leaves_a_lock_the_next_run_takes_over(tmp_path):
    out = tmp_path / "o"
    gate = threading.Event()
    with FakeServer(gate=gate) as server:
        args = server_args(server.url, out)
        first = start(args)
        wait_for(lambda: len(server.requests) > 0)
        first.send_signal(signal.SIGKILL)
        first.communicate(timeout=60)
        assert (out / ".lock").read_text().splitlines()[0] == str(first.pid)  # left behind by the dead holder
        gate.set()
        again = subprocess.run([sys.executable, "-m", "nlgbias", *args], env=ENV, capture_output=True, text=True,
                               timeout=300)
        assert again.returncode == 0, again.stderr
    assert_one_run(out, 2, 100)


def test_a_run_killed_while_creating_its_store_leaves_no_empty_store(tmp_path):
    """A store is created whole: a process killed meanwhile leaves nothing that reads as a lost store."""
    out = tmp_path / "o"
    args = fake_args(out, 1, 100)
    killed = subprocess.run([sys.executable, "-c", KILL_WHILE_CREATING_THE_STORE, *args], env=ENV,
                            capture_output=True, text=True)
    assert killed.returncode == -signal.SIGKILL
    assert not (out / "store.sqlite").exists()
    again = subprocess.run([sys.executable, "-m", "nlgbias", *args], env=ENV, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert_one_run(out, 1, 100)
    assert sorted(p.name for p in out.iterdir() if p.name.startswith(".")) == []  # no staging file left


HOLD = """
import sys, time
from nlgbias.store.lock import hold_folder
with hold_folder(sys.argv[1], command=["nlgbias", "run", "sheng2019", "--out", sys.argv[1]]):
    print("holding", flush=True)
    time.sleep(120)
"""


def test_a_report_is_not_rendered_while_a_run_holds_the_folder(tmp_path):
    out = tmp_path / "o"
    nlgbias.run("sheng2019", models=["fake"], samples=2, scorers=["vader"], n_boot=100, out=out, quiet=True)
    page = (out / "report.html").read_bytes()
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(out)], env=ENV, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        refused = subprocess.run([sys.executable, "-m", "nlgbias", "report", str(out), "--export", "markdown"], env=ENV,
                                 capture_output=True, text=True, timeout=120)
        assert refused.returncode == 2 and "Traceback" not in refused.stderr
        assert refused.stderr.strip() == (f"Error: {out} is in use by run pid {holder.pid} (nlgbias run sheng2019 --out "
                                          f"{out}); wait for it to finish, then re-render")
        assert (out / "report.html").read_bytes() == page and not (out / "export").exists()
    finally:
        holder.kill()
        holder.wait()
    done = subprocess.run([sys.executable, "-m", "nlgbias", "report", str(out)], env=ENV, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr  # the dead holder's lock is taken over
