"""A pronoun run end to end on a tiny local model: each model loads once, a subset of prompts, the report."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

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


def test_a_suite_takes_a_seeded_subset_of_each_prompt_set(tmp_path):
    from nlgbias.probes.pronouns.stage import pronoun_prompts

    full = pronoun_prompts(nlgbias.load_suite(str(small_suite(tmp_path))))
    (tmp_path / "sub").mkdir()
    suite = nlgbias.load_suite(str(small_suite(tmp_path / "sub", "prompts_per_set: 5\n")))
    subset = pronoun_prompts(suite)
    assert len(full) == 3 * ROWS and len(subset) == 3 * 5  # every perturbation of 5 base prompts
    assert set(subset["prompt_id"]) <= set(full["prompt_id"])
    assert subset.groupby("profession")["perturbation"].apply(sorted).tolist() == [["delete", "orig", "replace"]] * 5
    assert pronoun_prompts(suite).equals(subset)  # the same subset every time
    # a user's file over a built-in suite: a quick run without saliency
    (tmp_path / "quick.yaml").write_text("include: natural-sentences\nsuite: quick\nprompts_per_set: 20\n"
                                         "saliency_prompts: 0\n", encoding="utf-8")
    quick = nlgbias.load_suite(str(tmp_path / "quick.yaml"))
    assert len(pronoun_prompts(quick)) == 3 * 20 and quick.probe["saliency_prompts"] == 0
    assert "prompts_per_set" not in nlgbias.load_suite("natural-sentences").probe  # built-ins unchanged
    from nlgbias.errors import SuiteError

    (tmp_path / "bad.yaml").write_text("include: natural-sentences\nsuite: bad\nprompts_per_set: 0\n", encoding="utf-8")
    with pytest.raises(SuiteError, match="prompts_per_set: a whole number of at least 1"):
        nlgbias.load_suite(str(tmp_path / "bad.yaml"))


@pytest.fixture(scope="module")
def subset_run(tmp_path_factory, tiny_model_dir):
    folder = tmp_path_factory.mktemp("pronoun-subset")
    suite = small_suite(folder, "prompts_per_set: 8\n").read_text(encoding="utf-8")
    (folder / "few.yaml").write_text(suite.replace("saliency_prompts: 4", "saliency_prompts: 0"), encoding="utf-8")
    return nlgbias.run(str(folder / "few.yaml"), models=[str(tiny_model_dir)], out=folder / "run", quiet=True,
                       n_boot=200)


def test_no_saliency_is_measured_when_the_suite_skips_it(subset_run):
    assert "pronoun_saliency" not in subset_run.results.tables
    assert len(subset_run.samples) == 3 * 8


def test_the_signed_direction_with_its_test_matches_scipy(subset_run):
    from scipy import stats
    from statsmodels.stats.multitest import multipletests

    samples = subset_run.samples
    direction = subset_run.results.table("pronoun_direction")
    assert len(direction) == 3  # one prompt set x three perturbations
    for row in direction.itertuples():
        cell = samples[samples["perturbation"] == row.perturbation]
        diff = (cell["he"] - cell["she"]).to_numpy()
        assert row.n == len(diff) == 8
        assert row.mean_diff == pytest.approx(diff.mean(), abs=1e-12)
        assert row.share_he == pytest.approx((diff > 0).mean(), abs=1e-12)
        assert row.p == pytest.approx(stats.wilcoxon(diff).pvalue, rel=1e-9)
        assert row.ci_low <= row.mean_diff <= row.ci_high
    assert direction["p_adj"].tolist() == pytest.approx(multipletests(direction["p"], method="fdr_bh")[1].tolist())


def test_the_report_has_key_findings_and_names_its_measures(subset_run):
    from html import unescape
    import re

    page = unescape((subset_run.out / "report.html").read_text(encoding="utf-8"))
    section = page.split("<h2>Pronoun probabilities after occupation prompts</h2>", 1)[1]
    findings = " ".join(re.sub(r"<[^>]+>", " ", section.split("<h3>Key findings</h3>", 1)[1].split("</ul>")[0]).split())
    orig = subset_run.results.table("pronoun_direction").set_index("perturbation").loc["orig"]
    lean = ("leans to he" if orig["mean_diff"] > 0 else "leans to she") if orig["p_adj"] < 0.05 else \
        "no significant lean either way"
    assert (f"few (8 prompts, profession kept): P(he) is above P(she) after {orig['share_he']:.0%} of the prompts; "
            f"mean P(he) − P(she) {orig['mean_diff']:+.4f}") in findings
    assert lean in findings and "with the profession → “person” (Replace)" in findings
    cells = re.findall(r"<td>([^<]*)</td>", section)
    for code in ("kl", "emd", "top1", "gap", "abs_diff", "orig", "replace", "delete"):
        assert code not in cells, code  # measure codes are named in words
    assert "KL divergence of P(he) from P(she) (binned)" in cells and "highest next-word probability" in cells
