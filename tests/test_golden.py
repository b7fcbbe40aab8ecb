"""The refactor guard: fixed small runs give byte-identical ``samples.parquet`` and ``metrics.json``.

The golden files under ``tests/data/golden/<case>/`` were written by the code before the
issue-9 consolidation (``NLGBIAS_WRITE_GOLDEN=1 python -m pytest tests/test_golden.py``
rewrites them; do that only for an intended change of outputs, and say so in the commit).
Issue 13 rewrote ``sheng2019/metrics.json`` once, for the added ``mde`` column of the gap tables
and its ``meta.mde`` description only (checked: equal to the old file with those removed).
Issue 12 rewrote every case once for display names: a ``models`` table (display name -> full
``--model`` value) in ``metrics.json``, and ``./tiny`` named ``tiny`` in natural-sentences-local
(checked: equal to the old files after mapping that name and dropping that table).
Issue 8 rewrote ``sheng2019`` once, for the regard scorer's default path moving to ONNX Runtime int8
(checked: only ``regard_score``/``regard_details`` and the low-confidence tables changed; no label).
Timings, dates and library versions live in ``manifest.json``, which is not compared.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

import nlgbias

GOLDEN = Path(__file__).parent / "data" / "golden"
FILES = ("samples.parquet", "metrics.json")
CASES = {
    "sheng2019": dict(suite="sheng2019", models=["fake"], samples=2, n_boot=200),
    "kirk2021-identity": dict(suite="kirk2021-identity", models=["fake"], samples=3, n_boot=200,
                              scorers=["occupation"]),
    "yeo2020-professions": dict(suite="yeo2020-professions", models=["fake"], samples=3, n_boot=200),
    "pronouns-server": dict(suite="pronouns", models=["fake"], n_boot=200),
    "natural-sentences-local": dict(suite="natural-sentences", models=["TINY"], n_boot=200),
}


def _run(case: str, out: Path, tiny_model_dir: Path) -> None:
    kwargs = dict(CASES[case])
    if "TINY" in kwargs["models"]:  # a fixed relative name: the model id (and so the run id) is the path given
        (out / "tiny").symlink_to(tiny_model_dir, target_is_directory=True)
        kwargs["models"] = ["./tiny"]
    nlgbias.run(kwargs.pop("suite"), seed=0, out=out / "run", quiet=True, **kwargs)


@pytest.mark.parametrize("case", list(CASES))
def test_outputs_are_byte_identical_to_the_golden_run(case, tmp_path, tiny_model_dir, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _run(case, tmp_path, tiny_model_dir)
    tmp_path = tmp_path / "run"
    golden = GOLDEN / case
    if os.environ.get("NLGBIAS_WRITE_GOLDEN") == "1":
        golden.mkdir(parents=True, exist_ok=True)
        for name in FILES:
            shutil.copyfile(tmp_path / name, golden / name)
    for name in FILES:
        got, want = (tmp_path / name).read_bytes(), (golden / name).read_bytes()
        if got != want and name.endswith(".parquet"):  # say where, not just that
            pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / name), pd.read_parquet(golden / name))
        assert got == want, f"{case}/{name} differs from the golden run"
