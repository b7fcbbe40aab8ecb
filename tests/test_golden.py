"""The refactor guard: fixed small runs give the golden ``samples.parquet`` and ``metrics.json``.

What must be equal is equal to the letter: every text, label, id, count and column name.  Floats
(scores, probabilities, statistics) are compared with a tolerance, ``rel_tol=1e-6`` and
``abs_tol=1e-9``: BLAS, torch and ONNX Runtime kernels differ in the last bits across CPU types and
thread counts (an explained variance of 0.48839274821642115 here is ...126 on another CPU), and a
guard that compares float bits fails on any machine but the one that wrote it.  Floats inside JSON
text columns (``*_details``) are compared the same way, after parsing.

``NLGBIAS_WRITE_GOLDEN=1 python -m pytest tests/test_golden.py`` rewrites the golden files under
``tests/data/golden/<case>/``; do that only for an intended change of outputs, and say in the commit
which columns moved and why.  Timings, dates and library versions live in ``manifest.json``, which
is not compared.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import nlgbias

GOLDEN = Path(__file__).parent / "data" / "golden"
FILES = ("samples.parquet", "metrics.json")
REL_TOL, ABS_TOL = 1e-6, 1e-9
CASES = {
    "sheng2019": dict(suite="sheng2019", models=["fake"], samples=2, n_boot=200),
    "kirk2021-identity": dict(suite="kirk2021-identity", models=["fake"], samples=3, n_boot=200,
                              scorers=["occupation"]),
    "yeo2020-professions": dict(suite="yeo2020-professions", models=["fake"], samples=3, n_boot=200),
    "pronouns-server": dict(suite="pronouns", models=["fake"], n_boot=200),
    "natural-sentences-local": dict(suite="natural-sentences", models=["TINY"], n_boot=200),
}


def differences(got: Any, want: Any, where: str = "") -> list[str]:
    """Where two JSON-like values differ: floats beyond the tolerance, anything else at all.

    >>> differences({"a": [1, 0.1 + 0.2, "x"]}, {"a": [1, 0.3, "x"]})
    []
    >>> differences({"a": [1, 0.31, "x"], "b": None}, {"a": [2, 0.3, "y"], "b": float("nan")})
    ['a[0]: 1 != 2', 'a[1]: 0.31 != 0.3', "a[2]: 'x' != 'y'", 'b: None != nan']
    """
    if isinstance(got, dict) and isinstance(want, dict):
        if list(got) != list(want):
            return [f"{where or 'top'}: keys {list(got)} != {list(want)}"]
        return [d for k in got for d in differences(got[k], want[k], f"{where}.{k}" if where else str(k))]
    if isinstance(got, list) and isinstance(want, list):
        if len(got) != len(want):
            return [f"{where}: length {len(got)} != {len(want)}"]
        return [d for i, (g, w) in enumerate(zip(got, want)) for d in differences(g, w, f"{where}[{i}]")]
    if isinstance(got, float) and isinstance(want, float):
        if (math.isnan(got) and math.isnan(want)) or math.isclose(got, want, rel_tol=REL_TOL, abs_tol=ABS_TOL):
            return []
    elif type(got) is type(want) and got == want:
        return []
    return [f"{where}: {got!r} != {want!r}"]


def _json_cell(column: str, value: Any) -> Any:
    """A ``*_details`` cell parsed (floats inside compared with the tolerance); other cells as they are."""
    return json.loads(value) if column.endswith("_details") and isinstance(value, str) else value


def table_differences(got: pd.DataFrame, want: pd.DataFrame) -> list[str]:
    """Column names, dtypes and rows of two sample tables: floats with the tolerance, the rest exactly."""
    if list(got.columns) != list(want.columns) or len(got) != len(want):
        return [f"shape or columns: {got.shape} {list(got.columns)} != {want.shape} {list(want.columns)}"]
    out = [f"{c}: dtype {got[c].dtype} != {want[c].dtype}" for c in got if str(got[c].dtype) != str(want[c].dtype)]
    for column in got:
        for i, (g, w) in enumerate(zip(got[column].tolist(), want[column].tolist())):
            g, w = _json_cell(column, g), _json_cell(column, w)
            if isinstance(g, float) and isinstance(w, float) and math.isnan(g) and math.isnan(w):
                continue
            out += differences(g, w, f"{column}[{i}]")
    return out


def _run(case: str, out: Path, tiny_model_dir: Path) -> None:
    kwargs = dict(CASES[case])
    if "TINY" in kwargs["models"]:  # a fixed relative name: the model id (and so the run id) is the path given
        (out / "tiny").symlink_to(tiny_model_dir, target_is_directory=True)
        kwargs["models"] = ["./tiny"]
    nlgbias.run(kwargs.pop("suite"), seed=0, out=out / "run", quiet=True, **kwargs)


@pytest.mark.parametrize("case", list(CASES))
def test_outputs_match_the_golden_run(case, tmp_path, tiny_model_dir, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _run(case, tmp_path, tiny_model_dir)
    run = tmp_path / "run"
    golden = GOLDEN / case
    if os.environ.get("NLGBIAS_WRITE_GOLDEN") == "1":
        golden.mkdir(parents=True, exist_ok=True)
        for name in FILES:
            shutil.copyfile(run / name, golden / name)
    found = table_differences(pd.read_parquet(run / "samples.parquet"), pd.read_parquet(golden / "samples.parquet"))
    found += differences(json.loads((run / "metrics.json").read_text()), json.loads((golden / "metrics.json").read_text()))
    assert not found, f"{case}: {len(found)} differences from the golden run, e.g. {found[:5]}"


def test_the_comparison_tolerates_last_bits_but_not_labels():
    """The guard itself: a float moved in its last bits passes; a label, an id or a count does not."""
    want = pd.DataFrame({"label": ["negative", "neutral"], "score": [0.48839274821642126, 0.1], "n": [3, 4],
                         "regard_details": ['{"negative": 0.9778227210044861}', '{"negative": 0.5}']})
    moved = want.assign(score=[0.48839274821642115, 0.1], regard_details=['{"negative": 0.9778227210044866}',
                                                                   '{"negative": 0.5}'])
    assert table_differences(moved, want) == []
    assert table_differences(want.assign(label=["negative", "positive"]), want) == ["label[1]: 'positive' != 'neutral'"]
    assert table_differences(want.assign(n=[3, 5]), want) == ["n[1]: 5 != 4"]
    assert table_differences(want.assign(score=[0.4884, 0.1]), want) == ["score[0]: 0.4884 != 0.48839274821642126"]
    assert differences({"p": 0.05, "k": 1}, {"p": 0.05 * (1 + 1e-9), "k": 1.0}) == ["k: 1 != 1.0"]
