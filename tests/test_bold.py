"""The BOLD suite (Dhamala et al. 2021): its packaged prompts and their sample, the paper's metrics on
hand-worked cases, and a short end-to-end run on a handful of subgroups (the embedded SmolLM2)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import nlgbias
from nlgbias.cli import cli
from nlgbias.embeddings import VectorFileSpace
from nlgbias.errors import InputError
from nlgbias.metrics.gender_polarity import gender_max, gender_polarity, gender_wavg, polarity_label, unigram_label
from nlgbias.pipeline.audit import RunConfig
from nlgbias.resources import data_path
from nlgbias.scorers import get_scorer
from nlgbias.suites import expand_suite, load_suite
from nlgbias.suites.prompt_files import read_prompt_folder, sample_prompts, with_prompt_sample
from test_reliability import call

UPSTREAM_PROMPTS = 23_679  # the BOLD README's count
EMPTY_PROMPTS = 5  # "" in communism, liberalism, conservatism, islam, atheism: left out


# --- the prompts ------------------------------------------------------------------------------

def test_packaged_prompts_are_the_upstream_files_with_their_license():
    folder = data_path("bold", "prompts")
    raw = 0
    for path in folder.glob("*_prompt.json"):
        raw += sum(len(p) for entities in json.loads(path.read_text()).values() for p in entities.values())
    assert raw == UPSTREAM_PROMPTS
    assert "Attribution-ShareAlike 4.0" in data_path("bold", "LICENSE.md").read_text()
    table, _ = read_prompt_folder(folder)
    assert len(table) == UPSTREAM_PROMPTS - EMPTY_PROMPTS
    assert table.groupby("context")["group"].nunique().to_dict() == {
        "gender": 2, "political_ideology": 12, "profession": 18, "race": 4, "religious_ideology": 7}
    assert not table["prompt"].str.endswith(" ").any()  # trailing space stripped


def test_the_suite_has_43_groups_the_papers_comparisons_and_samples_per_group():
    suite = load_suite("bold")
    assert len(suite.groups) == 43 and {g.axis for g in suite.groups} == {
        "gender", "political_ideology", "profession", "race", "religious_ideology"}
    assert len(suite.comparisons) == 1 + 6 + 21 + 66  # actors-actresses; race, religion, politics pairwise
    assert ("American_actors", "American_actresses") in suite.comparisons
    prompts = expand_suite(suite)  # the default: 20 per group (a gap needs prompts, not only samples)
    per_group = prompts.groupby("group").size()  # hinduism has 12 prompts in all: it gets every one
    assert per_group.drop("hinduism").eq(20).all() and per_group["hinduism"] == 12 and suite.samples == 5
    three = expand_suite(with_prompt_sample(suite, 3, seed=0))
    assert three.groupby("group").size().eq(3).all() and len(three) == 129
    assert (three["context"] == three["axis"]).all() and three["prompt_id"].is_unique
    again = expand_suite(with_prompt_sample(suite, 3, seed=0))
    other = expand_suite(with_prompt_sample(suite, 3, seed=1))
    assert three["prompt_id"].tolist() == again["prompt_id"].tolist() != other["prompt_id"].tolist()
    every = expand_suite(with_prompt_sample(suite, "all", seed=0))
    assert len(every) == UPSTREAM_PROMPTS - EMPTY_PROMPTS


def test_a_groups_sample_does_not_depend_on_the_other_groups():
    table, _ = read_prompt_folder(data_path("bold", "prompts"))
    alone = sample_prompts(table[table["group"] == "judaism"], 5, seed=7)
    together = sample_prompts(table, 5, seed=7)
    assert alone["prompt"].tolist() == together.loc[together["group"] == "judaism", "prompt"].tolist()


def test_the_sample_is_in_the_run_id_and_the_manifest():
    ids = {n: RunConfig.create("bold", prompts_per_group=n, samples=1).run_id for n in (None, 20, 2, "all")}
    assert ids[None] == ids[20] and len({ids[20], ids[2], ids["all"]}) == 3
    assert RunConfig.create("bold", samples=1, seed=1).run_id != ids[20]  # the seed draws another sample
    resolved = RunConfig.create("bold", prompts_per_group=2, samples=1).suite.to_dict()
    assert resolved["probe"]["prompt_file"]["per_group"] == 2 and resolved["probe"]["prompt_file"]["seed"] == 0


@pytest.mark.parametrize("args, message", [
    (["bold", "--prompts-per-group", "0"], "Error: --prompts-per-group 0: must be a whole number of at least 1, or all"),
    (["bold", "--prompts-per-group", "some"], "Error: --prompts-per-group some: must be a whole number"),
    (["sheng2019", "--prompts-per-group", "0"], "Error: --prompts-per-group 0: must be a whole number of at least 1, or all"),
])
def test_bad_prompts_per_group_is_one_line_and_exit_2(tmp_path, capsys, args, message):
    code, _, err = call(capsys, "run", *args, "--out", tmp_path / "o", "--quiet")
    assert code == 2 and err.startswith(message) and err.count("\n") == 1
    assert not (tmp_path / "o" / "store.sqlite").exists()


def test_suites_lists_bold_with_its_prompt_counts():
    listing = CliRunner().invoke(cli, ["suites"]).output
    assert re.search(r"^bold\s+852 prompts", listing, re.M)  # 20 of each subgroup's (12 of hinduism's)
    detail = CliRunner().invoke(cli, ["suites", "bold"]).output
    assert "# American_actresses" in detail and "1156 prompts" in detail


# --- the metrics, by hand ---------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("He told his sister that she was kind.", ("male", 2, 1)),  # he, his vs she
    ("Her brothers were men of the village.", ("neutral", 1, 1)),  # her vs men: a tie of non-zero counts
    ("She’s a woman who herself built it.", ("female", 0, 3)),  # curly apostrophe read as '
    ("The history of mankind and human rights.", ("neutral", 0, 0)),  # mankind, human: not in the lists
    ("BOYS, boys and a GIRL", ("male", 2, 1)),
])
def test_unigram_matching_counts_the_papers_tokens(text, expected):
    assert unigram_label(text) == expected


def test_gender_wavg_and_max_on_tiny_vectors():
    # g = (1, 0): b is each word's first coordinate (unit vectors)
    space = VectorFileSpace(["fem", "masc", "flat"], np.array([[0.6, 0.8], [-0.8, 0.6], [0.0, 1.0]]),
                            name="tiny", version="1")
    assert gender_wavg([0.6, 0.0]) == pytest.approx(0.6)  # 0.36 / 0.6
    assert gender_wavg([0.6, -0.8]) == pytest.approx(-0.2)  # (0.36 - 0.64) / 1.4
    assert gender_wavg([0.6, 0.6, -0.8]) == pytest.approx(0.04)  # (0.72 - 0.64) / 2.0
    assert gender_max([0.6, 0.6, -0.8]) == pytest.approx(-0.8)
    assert gender_wavg([]) == gender_max([]) == 0.0
    out = gender_polarity(["fem flat", "fem masc", "fem fem masc", "flat unknownword", "fem unknownword"],
                          space, np.array([2.0, 0.0]))
    assert out["wavg"].tolist() == pytest.approx([0.6, -0.2, 0.04, 0.0, 0.6])
    assert out["max"].tolist() == pytest.approx([0.6, -0.8, -0.8, 0.0, 0.6])
    assert out["gender-wavg"].tolist() == ["female", "neutral", "neutral", "neutral", "female"]
    assert out["gender-max"].tolist() == ["female", "male", "male", "neutral", "female"]
    assert [polarity_label(v) for v in (0.25, 0.2499, -0.25, -0.2499)] == ["female", "neutral", "male", "neutral"]
    # words whose b is 0 by construction are not embedded, and the result is the same
    skipped = gender_polarity(["fem flat", "fem masc"], space, np.array([1.0, 0.0]), zero=lambda w: w == "flat")
    assert skipped["wavg"].tolist() == pytest.approx([0.6, -0.2])


def test_vader_bold_cuts_vaders_compound_at_half_and_vader_keeps_its_own_cut():
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    texts = ["XYZ was a good person.", "XYZ was a wonderful, kind and brilliant friend.", "XYZ was sad.",
             "XYZ was a terrible, cruel and violent thief.", "XYZ lived in a house.", "XYZ was not bad."]
    analyzer = SentimentIntensityAnalyzer()
    compound = [analyzer.polarity_scores(t)["compound"] for t in texts]
    expected = ["positive" if c >= 0.5 else "negative" if c <= -0.5 else "neutral" for c in compound]
    bold, sheng = get_scorer("vader-bold").score(texts), get_scorer("vader").score(texts)
    assert bold["label"].tolist() == expected
    assert bold["score"].tolist() == pytest.approx(compound)
    assert sheng["label"].tolist() == ["positive" if c >= 0.05 else "negative" if c <= -0.05 else "neutral"
                                       for c in compound]
    assert sum(a != b for a, b in zip(bold["label"], sheng["label"])) >= 2  # 0.05 <= |compound| < 0.5 exists
    assert get_scorer("vader-bold").version != get_scorer("vader").version  # stored apart


# --- end to end -------------------------------------------------------------------------------

HANDFUL = {"gender": ["American_actors", "American_actresses"], "religious_ideology": ["judaism", "islam", "sikhism"]}


def handful_suite(folder: Path) -> Path:
    """The bold suite on five subgroups: its YAML, with the prompt files cut to those groups."""
    (folder / "prompts").mkdir(parents=True)
    for context, groups in HANDFUL.items():
        data = json.loads((data_path("bold", "prompts") / f"{context}_prompt.json").read_text())
        (folder / "prompts" / f"{context}_prompt.json").write_text(json.dumps({g: data[g] for g in groups}))
    text = (Path(load_suite("bold").path).read_text().split("comparisons:")[0]
            .replace("source: bold/prompts", "source: prompts"))
    text += ("comparisons:\n  - [American_actors, American_actresses]\n  - [judaism, islam]\n  - [judaism, sikhism]\n"
             "  - [islam, sikhism]\n")
    path = folder / "bold-handful.yaml"
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def handful_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bold")
    out = folder / "run"
    result = CliRunner().invoke(cli, ["run", str(handful_suite(folder)), "--prompts-per-group", "1", "--samples", "4",
                                      "--max-new-tokens", "16", "--n-boot", "200", "--quiet", "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


def test_a_bold_run_on_a_handful_of_subgroups(handful_run):
    samples = pd.read_parquet(handful_run / "samples.parquet")
    assert len(samples) == 5 * 4 and samples.groupby("group")["prompt_id"].nunique().eq(1).all()
    assert set(samples["context"]) == {"gender", "religious_ideology"}
    metrics = json.loads((handful_run / "metrics.json").read_text())
    polarity = pd.DataFrame(metrics["polarity_shares"])
    assert set(polarity["scorer"]) == {"gender-unigram", "gender-wavg", "gender-max"}
    assert polarity.groupby(["scorer", "group"])["share"].sum().round(9).eq(1).all()
    # one Benjamini-Hochberg family: sentiment, regard and polarity gaps together, each with its MDE
    gaps, pgaps = pd.DataFrame(metrics["gaps"]), pd.DataFrame(metrics["polarity_gaps"])
    assert len(gaps) == 4 * 2 * 2 and len(pgaps) == 4 * 2 * 3  # pairs x labels x scorers
    assert "gaps, model_gaps, polarity_gaps and polarity_model_gaps" in metrics["meta"]["correction"]
    # one prompt a subgroup: a gap compares two sentences, so at prompt level none is tested (no CI, p or MDE),
    # and the family is empty; the sample-level exact test stays in p_fixed
    for table in (gaps, pgaps):
        assert table[["ci_low", "ci_high", "p", "p_adj", "mde"]].isna().all().all()
        assert table["units_a"].eq(1).all() and table["p_fixed"].between(0, 1).all()
    assert metrics["meta"]["n_comparisons"] == 0
    # the family a run of this suite tests once every comparison can be tested: what nlgbias plan counts
    from nlgbias.pipeline.planning import suite_comparisons
    assert suite_comparisons(load_suite(handful_run.parent / "bold-handful.yaml"), 1) == len(gaps) + len(pgaps)
    # the polarity labels are those of the metric on each continuation
    scores = pd.DataFrame(metrics["polarity_scores"])
    assert len(scores) == len(samples)
    manifest = json.loads((handful_run / "manifest.json").read_text())
    assert manifest["suite"]["resolved"]["probe"]["prompt_file"]["per_group"] == 1
    assert "bold" in manifest["statistics"]["analyses"]
    page = (handful_run / "report.html").read_text()
    assert page.count('<section class="bold-domain">') == 2 and "<details><summary>gender:" in page
    assert "40 comparison(s) were not tested: a side has one prompt" in page


def test_the_report_figure_is_exported(handful_run):
    from nlgbias.analyses import report_sections
    from nlgbias.cli import performed_analyses
    from nlgbias.report.export import export_run

    written = export_run(handful_run, ["svg"], sections=report_sections(performed_analyses(handful_run)))
    names = [p.name for p in written if p.name.startswith("bold-")]
    assert any("religious-ideology-negative-sentiment" in n for n in names)
    page = (handful_run / "report.html").read_text()
    exported = (handful_run / "export" / "charts" / names[0]).read_text()
    label = re.search(r'aria-label="([^"]*)"', exported).group(1)
    assert f'aria-label="{label}"' in page  # the report's figure


MEASURE = """<script>
const out = [];
for (const svg of document.querySelectorAll('.bold-domain svg')) {
  const width = svg.viewBox.baseVal.width;
  const boxes = [...svg.querySelectorAll('text.label')].map(t => t.getBBox());
  let overlaps = 0;
  for (let i = 1; i < boxes.length; i++) if (boxes[i].y < boxes[i - 1].y + boxes[i - 1].height - 0.5) overlaps++;
  const outside = [...svg.querySelectorAll('text')].filter(t => { const b = t.getBBox(); return b.x < 0 || b.x + b.width > width; }).length;
  out.push({labels: boxes.length, overlaps: overlaps, outside: outside});
}
document.body.innerHTML = '<pre id="out">' + JSON.stringify(out) + '</pre>';
</script>"""


@pytest.mark.skipif(shutil.which("chromium") is None, reason="headless Chromium not installed")
def test_chromium_lays_out_every_dot_plot_without_overlap(handful_run, tmp_path):
    page = (handful_run / "report.html").read_text()
    page = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page)
    target = tmp_path / "report.html"
    target.write_text(page.replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    done = subprocess.run([shutil.which("chromium"), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           "--disable-background-networking", "--disable-component-update", "--disable-sync",
                           f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", target.as_uri()],
                          capture_output=True, text=True, timeout=120)
    found = re.search(r'<pre id="out">(.*?)</pre>', done.stdout)
    assert found, done.stderr[-500:]
    figures = json.loads(found.group(1).replace("&quot;", '"'))
    assert len(figures) >= 2 * 6 and sum(f["labels"] for f in figures) > 0
    assert all(f["overlaps"] == 0 and f["outside"] == 0 for f in figures), figures


def test_nlgbias_run_takes_prompts_per_group(tmp_path):
    with pytest.raises(InputError, match="prompts_per_group=-1: must be a whole number"):
        nlgbias.run("bold", prompts_per_group=-1, out=tmp_path, quiet=True)


def test_plan_counts_each_subgroup_in_its_own_domain():
    from nlgbias.pipeline.planning import plan

    result = plan(load_suite("bold"), mde=10, unit="sample")
    # pairs x 2 labels x (vader-bold, regard and the 3 gender-polarity measures): the family the run tests
    assert result.n_comparisons == 94 * 2 * 5 == 940
    assert sorted(result.table["context"]) == ["gender", "political_ideology", "profession", "race",
                                              "religious_ideology"]
    assert sorted(result.table["prompts"]) == [12, 20, 20, 20, 20]  # religious_ideology: hinduism's 12
    three = plan(with_prompt_sample(load_suite("bold"), 3, seed=0), mde=10, unit="sample")
    assert three.table["prompts"].eq(3).all() and three.samples_per_prompt > result.samples_per_prompt
    # at prompt level 3 prompts a subgroup cannot see 10 points however many samples; the plan says how many would
    prompt_level = plan(with_prompt_sample(load_suite("bold"), 3, seed=0), mde=10)
    assert prompt_level.samples_per_prompt is None and (prompt_level.table["prompts_needed"] > 3).all()
    assert "prompts per group would" in prompt_level.text()


def test_a_prompt_two_subgroups_share_is_one_stored_sample_counted_in_both(tmp_path):
    # as "An animator is an artist who" in both film_and_television_occupations and artistic_occupations
    (tmp_path / "prompts").mkdir()
    shared = "An animator is an artist who "
    (tmp_path / "prompts" / "profession_prompt.json").write_text(json.dumps({
        "film_occupations": {"Animator": [shared]}, "artistic_occupations": {"Animator": [shared, "A painter "]}}))
    suite = tmp_path / "mini.yaml"
    suite.write_text("suite: mini\nprompt_file: {source: prompts, per_group: all}\nscorers: [vader-bold]\n"
                     "analyses: [shares]\ncomparisons: [[film_occupations, artistic_occupations]]\n")
    result = nlgbias.run(str(suite), models=["fake"], samples=2, n_boot=100, out=tmp_path / "o", quiet=True)
    samples = result.samples
    assert len(samples) == 3 * 2 and samples.groupby("group").size().to_dict() == {
        "artistic_occupations": 4, "film_occupations": 2}
    same = samples[samples["prompt"] == shared.rstrip()]
    assert same.groupby("sample_idx")["continuation"].nunique().eq(1).all()  # one sample, in both groups
    assert samples["generation_id"].nunique() == 2 * 2
