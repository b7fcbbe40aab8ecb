"""A disk that fills up during a run: one line, exit 2, the store intact, an exact resume.

The run's folder is on a small tmpfs (mounting one needs root, as in CI; elsewhere these tests
are skipped), filled with a filler file until only a little space is left: at the start of the
run, in the middle of generation, or after the store is complete while the outputs are written.
Counted and explained in docs/reliability.md.
"""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import nlgbias

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(nlgbias.__file__).parents[1]),
                                                    os.environ.get("PYTHONPATH", "")])}
SAMPLES = 10  # sheng2019: 600 samples, about 1 MB of store


def run_args(out: Path, quiet: bool) -> list[str]:
    return ["run", "sheng2019", "--model", "fake", "--samples", str(SAMPLES), "--scorer", "vader", "--n-boot", "100",
            "--batch-size", "60", "--out", str(out), *(["--quiet"] if quiet else [])]


def nlgbias_run(out: Path, *, quiet: bool = True) -> subprocess.CompletedProcess:
    """The run in a process of its own; ``quiet=False``: with its notes (how many samples it generated)."""
    return subprocess.run([sys.executable, "-m", "nlgbias", *run_args(out, quiet)], env=ENV, capture_output=True,
                          text=True)


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("reference") / "o"
    done = nlgbias_run(out)
    assert done.returncode == 0, done.stderr
    return out


@pytest.fixture()
def small_disk(tmp_path):
    folder = tmp_path / "disk"
    folder.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(folder)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {mounted.stderr.decode().strip()}")
    yield folder
    subprocess.run(["umount", "-l", str(folder)], check=True)


def fill(disk: Path, leave: int) -> Path:
    """A file that takes all free space of ``disk`` but ``leave`` bytes."""
    filler = disk / "filler"
    stat = os.statvfs(disk)
    size = stat.f_bavail * stat.f_frsize - leave
    with open(filler, "wb") as handle:
        block = b"\0" * (1 << 20)
        while size > 0:
            size -= handle.write(block[: min(len(block), size)])
    return filler


def stored_rows(out: Path) -> int:
    if not (out / "store.sqlite").exists():
        return 0
    with sqlite3.connect(f"file:{out / 'store.sqlite'}?mode=ro", uri=True) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return db.execute("SELECT COUNT(*) FROM generations").fetchone()[0]


def assert_disk_full_line(done: subprocess.CompletedProcess, out: Path) -> None:
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    assert len(lines) == 1 and lines[0].startswith(f"Error: {out}"), done.stderr
    assert "disk full (no space left on device)" in lines[0]


def assert_same_outputs(out: Path, reference: Path) -> None:
    pd.testing.assert_frame_equal(pd.read_parquet(out / "samples.parquet"), pd.read_parquet(reference / "samples.parquet"))
    for name in ("metrics.json", "samples.jsonl", "shares.csv", "gaps.csv"):
        assert (out / name).read_bytes() == (reference / name).read_bytes(), name


@pytest.mark.parametrize("leave, some_kept", [(48_000, False), (160_000, True), (400_000, True)],
                         ids=["at-start", "early", "mid-generation"])
def test_a_disk_that_fills_during_generation_stops_the_run_in_one_line_and_resumes_exactly(
        small_disk, reference, leave, some_kept):
    out = small_disk / "o"
    filler = fill(small_disk, leave)
    done = nlgbias_run(out)
    assert_disk_full_line(done, out)
    filler.unlink()  # space again (reading a WAL store needs a little)
    kept = stored_rows(out)
    assert kept < 60 * SAMPLES and (kept > 0) == some_kept
    again = nlgbias_run(out, quiet=False)
    assert again.returncode == 0, again.stderr
    generated = int(re.search(r"\((\d+) generated now\)", again.stderr).group(1))
    assert generated == 60 * SAMPLES - kept  # only what was missing
    assert_same_outputs(out, reference)


def test_a_disk_that_fills_while_the_outputs_are_written_keeps_the_store_and_rebuilds_them(small_disk, reference):
    out = small_disk / "o"
    first = nlgbias_run(out)
    assert first.returncode == 0, first.stderr
    for path in out.iterdir():
        if not path.name.startswith("store.sqlite"):
            path.unlink()
    filler = fill(small_disk, 150_000)  # the store's few writes fit; samples, metrics and report do not
    done = nlgbias_run(out)
    assert_disk_full_line(done, out)
    assert not (out / "manifest.json").exists()  # nothing vouches for a partial set
    assert not [p.name for p in out.iterdir() if p.name.endswith(".tmp")]  # no half-written file left
    filler.unlink()
    assert stored_rows(out) == 60 * SAMPLES
    again = nlgbias_run(out, quiet=False)
    assert again.returncode == 0, again.stderr
    assert "(0 generated now)" in again.stderr
    assert_same_outputs(out, reference)
