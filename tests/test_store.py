"""The run store: idempotent inserts, resume after kill -9, reruns that only rebuild what is missing."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pandas as pd
import pytest

import nlgbias
from nlgbias.store import RunStore


def test_inserts_are_idempotent_and_batches_atomic(tmp_path):
    store = RunStore(tmp_path / "s.sqlite")
    row = {"generation_id": "g1", "model": "m", "prompt": "p", "params": {"a": 1}, "seed": 3, "continuation": " x"}
    assert store.add_generations([row, {**row, "generation_id": "g2"}]) == 2
    assert store.add_generations([row, {**row, "continuation": " changed"}]) == 0
    assert store.count_generations() == 2
    assert store.generations(["g1"])["continuation"].tolist() == [" x"]
    with pytest.raises(KeyError):
        store.add_generations([{**row, "generation_id": "g3"}, {"generation_id": "g4"}])  # fails mid-batch
    assert store.existing_generations(["g1", "g2", "g3", "g4"]) == {"g1", "g2"}  # nothing of that batch stored
    assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    store.close()


def test_a_file_that_is_not_a_store_is_refused(tmp_path):
    bad = tmp_path / "store.sqlite"
    bad.write_text("not a database at all, just text" * 100)
    with pytest.raises(nlgbias.NlgbiasError, match="not a usable nlgbias store"):
        RunStore(bad)


def run_cli(args, env=None):
    return subprocess.Popen([sys.executable, "-m", "nlgbias", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, **(env or {})})


def count_rows(path) -> int:
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5) as db:
            return db.execute("SELECT COUNT(*) FROM generations").fetchone()[0]
    except sqlite3.Error:
        return 0


def comparable(out):
    samples = pd.read_parquet(out / "samples.parquet")
    metrics = json.loads((out / "metrics.json").read_text())
    manifest = json.loads((out / "manifest.json").read_text())
    for key in ("started_at", "finished_at", "command", "timings_s", "generated_now", "peak_memory_gb",
                "output_sha256"):  # of the invocation (the report shows it)
        manifest.pop(key)
    return samples, metrics, manifest


def test_resume_after_kill_9_equals_an_uninterrupted_run(tmp_path, tiny_model_dir):
    args = ["run", "sheng2019", "--model", str(tiny_model_dir), "--samples", "10", "--batch-size", "8",
            "--max-new-tokens", "12", "--quiet"]
    killed, clean = tmp_path / "killed", tmp_path / "clean"
    proc = run_cli(args + ["--out", str(killed)])
    deadline = time.monotonic() + 120
    while count_rows(killed / "store.sqlite") < 80 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert proc.poll() is None, "the run finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    partial = count_rows(killed / "store.sqlite")
    assert 80 <= partial < 600 and partial % 8 == 0  # whole batches only
    assert not (killed / "manifest.json").exists()

    resumed = run_cli(args + ["--out", str(killed)])
    assert resumed.wait(timeout=300) == 0, resumed.stderr.read().decode()
    uninterrupted = run_cli(args + ["--out", str(clean)])
    assert uninterrupted.wait(timeout=300) == 0, uninterrupted.stderr.read().decode()

    (s1, m1, f1), (s2, m2, f2) = comparable(killed), comparable(clean)
    pd.testing.assert_frame_equal(s1, s2)
    assert m1 == m2 and f1 == f2
    assert len(s1) == 600 and s1["generation_id"].is_unique
    assert count_rows(killed / "store.sqlite") == 600

    # Another batch size: the same samples, except where rounding in another batch shape tips a
    # near-tie between two tokens (the tiny random model's distributions are nearly flat).
    other = run_cli([("64" if a == "8" else a) for a in args] + ["--out", str(tmp_path / "b64")])
    assert other.wait(timeout=300) == 0, other.stderr.read().decode()
    s3 = pd.read_parquet(tmp_path / "b64" / "samples.parquet")
    assert list(s3["generation_id"]) == list(s1["generation_id"])
    assert (s3["continuation"] == s1["continuation"]).mean() >= 0.98


def test_rerunning_a_finished_run_generates_nothing_and_rebuilds_only_what_is_missing(tmp_path, tiny_model_dir):
    options = dict(models=[str(tiny_model_dir)], samples=2, max_new_tokens=6, quiet=True, n_boot=200)
    first = nlgbias.run("sheng2019", out=tmp_path, **options)
    assert first.generated == 120
    assert first.rebuilt == first.manifest["outputs"] == nlgbias.pipeline.audit.output_names(first.results)
    report_time = (tmp_path / "report.html").stat().st_mtime_ns
    again = nlgbias.run("sheng2019", out=tmp_path, **options)
    assert (again.generated, again.rebuilt) == (0, [])
    (tmp_path / "gaps.csv").unlink()
    (tmp_path / "samples.jsonl").unlink()
    third = nlgbias.run("sheng2019", out=tmp_path, **options)
    assert (third.generated, third.rebuilt) == (0, ["samples.jsonl", "gaps.csv", "manifest.json"])
    assert (tmp_path / "report.html").stat().st_mtime_ns == report_time
    more = nlgbias.run("sheng2019", out=tmp_path, **{**options, "samples": 3})  # a new run id: 60 new samples
    assert more.generated == 60 and more.run_id != first.run_id
    assert more.rebuilt == first.manifest["outputs"]


def test_missing_batches_are_fixed_slices_of_the_plan(tmp_path):
    from nlgbias.pipeline.generate import missing_batches

    plan = pd.DataFrame({"generation_id": [f"g{i}" for i in range(20)], "model": "m", "prompt": "p", "seed": 0})
    store = RunStore(tmp_path / "s.sqlite")
    store.add_generations([{"generation_id": f"g{i}", "model": "m", "prompt": "p", "params": {}, "seed": 0,
                            "continuation": ""} for i in [*range(8), 10, 11]])
    fixed = [list(b["generation_id"]) for b in missing_batches(plan, store, 4)]
    assert fixed == [["g8", "g9", "g10", "g11"], ["g12", "g13", "g14", "g15"], ["g16", "g17", "g18", "g19"]]
