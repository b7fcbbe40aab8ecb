"""A pronoun run end to end on a tiny local model: each model loads once, a subset of prompts, the report."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

import nlgbias
from nlgbias.resources import package_path

ROWS = 12  # natural sentences in the small prompt set


def small_suite(folder: Path, extra: str = "") -> Path:
    """A pronoun suite over the first ROWS natural sentences (and their perturbations)."""
    source = pd.read_csv(package_path("suites", "data", "natural-sentences.csv"), dtype=str, keep_default_na=False)
    source.head(ROWS).to_csv(folder / "few.csv", index=False)
    path = folder / "few.yaml"
    path.write_text("suite: few-sentences\nkind: pronoun\nversion: 1\nprompt_sets:\n"
                    "  - {id: few, source: few.csv}\nsaliency_prompts: 4\n" + extra, encoding="utf-8")
    return path


def test_a_pronoun_run_loads_each_model_once(tmp_path, tiny_model_dir, capfd):
    suite = small_suite(tmp_path)
    nlgbias.run(str(suite), models=[str(tiny_model_dir)], out=tmp_path / "run", n_boot=100)
    err = capfd.readouterr().err
    assert err.count(f"loading {tiny_model_dir} ...") == 1, err
    saliency = pd.read_csv(tmp_path / "run" / "pronoun_saliency.csv")
    assert not saliency.empty  # the model was still open for saliency and the default probe
    assert not pd.read_csv(tmp_path / "run" / "pronoun_default.csv").empty
