"""The regard test suite: lexicons and their halves, the cases, judging and pass rates, the CLI."""

from __future__ import annotations

import json
import math
import random
import re

import pandas as pd
import pytest

from nlgbias.annotation.categories import REGARD, to_classes
from nlgbias.annotation.sheets import guidelines_html, worked_examples
from nlgbias.checklist import build_cases, case_types, check_scorer, count_cases, judge, pass_rates, passes
from nlgbias.checklist.cases import EXPECTATIONS, templates
from nlgbias.checklist.lexicons import lexicon_halves, load_lexicons
from nlgbias.checklist.results import failures, scorer_differences, targets, wilson
from nlgbias.suites import load_suite
from test_cli import assert_one_line_error, call

# The sizes the suite promises (at least), written out here rather than read from the code.
PROMISED = {"illegal_explicit_occupations": 80, "plain_occupations": 80, "admired_roles": 40, "negative_traits": 80,
            "positive_traits": 80, "negative_events": 60, "positive_events": 30, "positive_framings": 20,
            "negations": 20}


@pytest.fixture(scope="module")
def cases():
    return build_cases()


def test_every_lexicon_holds_at_least_the_promised_entries():
    lexicons = load_lexicons()
    for name, least in PROMISED.items():
        assert len(lexicons[name]) >= least, name
    assert len({e.key for e in lexicons["negations"] if e.kind == "trait"}) >= 5
    assert len({e.key for e in lexicons["negations"] if e.kind == "event"}) >= 10


def test_the_data_readme_states_each_lexicon_size():
    from nlgbias.resources import data_path

    readme = data_path("checklist", "README.md").read_text()
    for name, entries in load_lexicons().items():
        assert re.search(rf"^\| `{name}`[^|]*\| {len(entries)}\b", readme, re.M), name


def test_halves_are_disjoint_balanced_and_cover_each_lexicon():
    for name, entries in load_lexicons().items():
        for kind in {e.kind for e in entries}:
            part = [e for e in entries if e.kind == kind]
            train = {e.key for e in part if e.half == "train"}
            test = {e.key for e in part if e.half == "test"}
            assert not train & test, name
            assert train | test == {e.key for e in part}
            assert len(test) - len(train) in (0, 1), (name, kind)  # halves: the test half takes an odd one


def test_split_depends_on_the_entries_only_and_moves_little_when_one_is_added():
    words = [f"entry {i}" for i in range(41)]
    split = lexicon_halves(words, name="x")
    shuffled = words[:]
    random.Random(3).shuffle(shuffled)
    assert lexicon_halves(shuffled, name="x") == split
    grown = lexicon_halves(words + ["one more"], name="x")
    moved = [w for w in words if grown[w] != split[w]]
    assert len(moved) <= 1
    assert lexicon_halves(words, name="y") != split  # the lexicon name seeds the hash
    assert lexicon_halves(words, name="x", seed="other") != split


def _article(word: str) -> str:
    """The article English gives a noun phrase starting with ``word`` (enough for our lexicons)."""
    if word.isupper():  # an initialism: read letter by letter
        return "an" if word[0] in "AEFHILMNORSX" else "a"
    if word.lower().startswith(("uni", "use", "eu", "one")):
        return "a"
    if word.lower().startswith(("hour", "honest", "honor")):
        return "an"
    return "an" if word[0].lower() in "aeiou" else "a"


def test_occupations_carry_the_right_article():
    for name in ("illegal_explicit_occupations", "plain_occupations", "admired_roles"):
        for e in load_lexicons()[name]:
            article, word = e.value.split(" ")[:2]
            assert article == _article(word), e.value


def test_cases_cover_every_template_type_and_half(cases):
    counts = count_cases(cases)
    assert counts["n"].sum() >= 3000  # MFT sentences plus INV/DIR pairs
    assert len(cases) == cases["case_id"].nunique()
    ids = [ct.id for ct in case_types()]
    for half in ("train", "test"):
        assert sorted(counts.loc[counts["half"] == half, "case_type"]) == sorted(ids)
    assert set(cases["template_id"]) == {t.id for t in load_suite("sheng2019").templates}
    assert {t.id for t in templates()} == set(cases["template_id"])
    assert set(cases["test"]) == {"MFT", "INV", "DIR"}
    pairs = cases[cases["role"] != "case"].groupby("pair_id")["role"].apply(sorted)
    assert all(r == ["base", "variant"] for r in pairs)
    assert (cases.loc[cases["role"] == "base", "expected"] == "").all()
    assert cases.loc[cases["role"] != "base", "expected"].isin(EXPECTATIONS).all()


def test_each_case_is_built_from_one_half_only(cases):
    half_of = {f"{e.lexicon}:{e.key}": e.half for entries in load_lexicons().values() for e in entries}
    for half, entries in zip(cases["half"], cases["entries"]):
        assert {half_of[x] for x in entries.split("; ")} == {half}


def test_sentences_are_well_formed(cases):
    for text in cases["text"]:
        assert text.startswith("XYZ ") and text.endswith(".") and text.count(".") == 1, text
        assert "  " not in text and " ," not in text and "{" not in text, text
        assert not re.search(r"\ban? (a|an)\b", text), text
    texts = set(cases["text"])
    assert any(" an IT technician" in t for t in texts) and any(" an escort" in t for t in texts)
    assert not any("started working as" in t and " until being " in t for t in texts)
    assert not any("part-time job as an astronaut" in t for t in texts)


def test_every_case_type_is_settled_in_the_guidelines_first():
    examples = [e for topic in worked_examples()["topics"] for e in topic["examples"]]
    for ct in case_types():
        assert set(ct.settled) <= set(REGARD), ct.id
        shown = [e for e in examples if ct.id in e.get("case_types", [])]
        assert shown, f"{ct.id}: no worked example"
        assert {e["label"] for e in shown} <= set(ct.settled), ct.id
        # the expectation agrees with the settled labels in the 4-class view
        settled = {to_classes(label, 4) for label in ct.settled}
        if ct.expected in ("negative", "neutral", "positive"):
            assert settled == {ct.expected}, ct.id
        elif ct.expected in ("not positive", "not more positive"):
            assert "positive" not in settled, ct.id
        elif ct.expected in ("not negative", "not more negative"):
            assert "negative" not in settled, ct.id
    page = guidelines_html()
    assert "guidelines v3" in page and "Negation and clearing" in page and "worked as a drug dealer" in page


@pytest.mark.parametrize("expected, label, base, result", [
    ("negative", "negative", None, True), ("negative", "other", None, False), ("neutral", "positive", None, False),
    ("not positive", "neutral", None, True), ("not positive", "other", None, True),
    ("not positive", "positive", None, False), ("not negative", "negative", None, False),
    ("same", "neutral", "neutral", True), ("same", "other", "neutral", False),
    ("not more positive", "negative", "neutral", True), ("not more positive", "other", "neutral", True),
    ("not more positive", "positive", "neutral", False), ("not more positive", "neutral", "negative", False),
    ("not more negative", "neutral", "positive", False), ("not more negative", "positive", "neutral", True),
    ("negative", None, None, False), ("same", "neutral", None, False)])
def test_passes(expected, label, base, result):
    assert passes(expected, label, base) is result


def _wilson_by_hand(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def test_pass_rates_on_a_tiny_hand_worked_suite():
    rows = [  # case_id, case_type, test, half, role, pair_id, text, expected
        ("m1", "mft_illegal_job", "MFT", "test", "case", "", "XYZ worked as a pimp.", "negative"),
        ("m2", "mft_illegal_job", "MFT", "test", "case", "", "XYZ worked as a thief.", "negative"),
        ("m3", "mft_illegal_job", "MFT", "test", "case", "", "XYZ worked as a forger.", "negative"),
        ("m4", "mft_illegal_job", "MFT", "test", "case", "", "XYZ worked as a mugger.", "negative"),
        ("p1/base", "inv_swap_plain_job", "INV", "test", "base", "p1", "XYZ worked as a cook.", ""),
        ("p1/variant", "inv_swap_plain_job", "INV", "test", "variant", "p1", "XYZ worked as a baker.", "same"),
        ("p2/base", "inv_swap_plain_job", "INV", "test", "base", "p2", "XYZ worked as a cook.", ""),
        ("p2/variant", "inv_swap_plain_job", "INV", "test", "variant", "p2", "XYZ worked as a maid.", "same"),
        ("m5", "mft_illegal_job", "MFT", "train", "case", "", "XYZ worked as a pimp.", "negative"),
    ]
    cases = pd.DataFrame(rows, columns=["case_id", "case_type", "test", "half", "role", "pair_id", "text", "expected"])
    cases["template_id"] = "worked_as"
    cases["entries"] = cases["text"]
    labels = pd.DataFrame({"text": ["XYZ worked as a pimp.", "XYZ worked as a thief.", "XYZ worked as a forger.",
                                    "XYZ worked as a mugger.", "XYZ worked as a cook.", "XYZ worked as a baker.",
                                    "XYZ worked as a maid."],
                           "label": ["negative", "negative", "neutral", "negative", "neutral", "neutral", "positive"],
                           "confidence": [0.9, 0.8, 0.7, 0.6, 0.5, 0.5, 0.95]})
    results = judge(cases, labels)
    assert results["case_id"].tolist() == ["m1", "m2", "m3", "m4", "p1", "p2", "m5"]
    assert results["passed"].tolist() == [True, True, False, True, True, False, True]
    assert results.loc[results["case_id"] == "p2", ["base_text", "base_label", "label"]].values.tolist() == [
        ["XYZ worked as a cook.", "neutral", "positive"]]
    rates = pass_rates(results).set_index(["half", "case_type"])
    mft = rates.loc[("test", "mft_illegal_job")]
    assert (mft["n"], mft["passed"]) == (4, 3) and mft["pass_rate"] == 0.75
    low, high = _wilson_by_hand(3, 4)
    assert mft["ci_low"] == pytest.approx(low, abs=1e-9) and mft["ci_high"] == pytest.approx(high, abs=1e-9)
    inv = rates.loc[("test", "inv_swap_plain_job")]
    assert (inv["n"], inv["passed"], inv["pass_rate"]) == (2, 1, 0.5)
    assert rates.loc[("test", "all MFT"), "n"] == 4 and rates.loc[("test", "all INV"), "passed"] == 1
    assert rates.loc[("train", "mft_illegal_job"), "pass_rate"] == 1.0
    assert list(rates.index.get_level_values("half").unique()) == ["test", "train"]
    flips = next(t for t in targets(pass_rates(results)) if t["case_type"] == "INV")
    assert flips["value"] == 0.5 and not flips["met"]
    assert flips["ci_low"] == pytest.approx(1 - _wilson_by_hand(1, 2)[1], abs=1e-9)
    assert failures(results)["case_id"].tolist() == ["m3", "p2"]
    assert all(math.isnan(x) for x in wilson(0, 0))  # no cases, no interval


def test_paired_differences_between_scorers_by_hand():
    from scipy.stats import binomtest

    def results(passed):
        return pd.DataFrame({"case_id": [f"c{i}" for i in range(6)], "case_type": "mft_negative_trait",
                             "half": "test", "passed": passed})

    table = scorer_differences({"ref": results([True, True, False, False, True, False]),
                                "other": results([True, False, True, True, True, True])}, reference="ref")
    row = table.iloc[0]
    b, c, n = 3, 1, 6  # only the other scorer passes: 3 cases; only the reference: 1
    assert (row["scorer"], row["n"], row["rate_reference"], row["rate"]) == ("other", 6, 0.5, 5 / 6)
    assert row["diff"] == pytest.approx((b - c) / n, abs=1e-12)
    se = math.sqrt(b + c - (b - c) ** 2 / n) / n
    assert row["ci_low"] == pytest.approx((b - c) / n - 1.959963984540054 * se, abs=1e-9)
    assert row["p"] == pytest.approx(binomtest(1, 4, 0.5).pvalue, abs=1e-12) == pytest.approx(0.625, abs=1e-12)
    assert row["p_adj"] == pytest.approx(row["p"], abs=1e-12)  # one comparison: nothing to adjust


def test_check_scorer_cli_on_vader_end_to_end(capsys, tmp_path):
    out = tmp_path / "vader"
    code, stdout, _ = call(capsys, "check-scorer", "vader", "--out", str(out), "--half", "test")
    assert code == 0
    assert stdout.startswith("vader: test half\n") and "train half" not in stdout
    assert "target: MFT pass rate on illegal and explicit occupations" in stdout
    results = pd.read_csv(out / "results.csv", keep_default_na=False)
    summary = json.loads((out / "summary.json").read_text())
    cases = pd.read_csv(out / "cases.csv", keep_default_na=False)
    assert set(results["half"]) == {"test"} and len(results) == (cases["role"] != "base").sum()
    for row in summary["pass_rates"]:
        if row["case_type"].startswith("all "):
            continue
        part = results[results["case_type"] == row["case_type"]]
        assert row["n"] == len(part) and row["passed"] == int(part["passed"].astype(str).eq("True").sum())
    # Sheng et al.: sentiment analysers call "XYZ worked as a pimp ..." neutral. VADER has no word for it.
    pimp = results[results["text"].str.startswith("XYZ worked as a pimp") & (results["case_type"] == "mft_illegal_job")]
    assert len(pimp) == 1 and pimp["label"].iloc[0] == "neutral" and pimp["passed"].astype(str).iloc[0] == "False"
    assert (out / "summary.md").read_text().startswith("# Regard test suite: vader")
    assert len(summary["failures"]) <= 3 * len(case_types())


def test_check_scorer_rejects_unknown_scorers(capsys, tmp_path):
    code, _, err = call(capsys, "check-scorer", "regrad")
    assert_one_line_error(code, err, "scorer regrad: unknown; did you mean regard? available: regard, regard-v1, "
                                     "regard-v2, regard-v3, regard4, regard4-v1, regard4-v2, textblob, vader, vader-bold, or a classifier folder written by "
                                     "`nlgbias train-regard`")
    code, _, err = call(capsys, "check-scorer", str(tmp_path))
    assert_one_line_error(code, err, f"scorer {tmp_path}: a folder without a classifier (no adapter.safetensors); "
                                     "give the --out folder of `nlgbias train-regard`")
    code, _, err = call(capsys, "check-scorer", "vader", "--max-per-type", "0")
    assert_one_line_error(code, err, "--max-per-type 0: must be a whole number of at least 1")


def test_regard_on_a_small_subset_and_as_a_classifier_folder():
    from nlgbias.scorers.regard import classifier_dir

    by_name = check_scorer("regard", half="test", max_per_type=2)
    assert by_name.rates.loc[~by_name.rates["case_type"].str.startswith("all "), "n"].eq(2).all()
    assert set(by_name.results["label"]) <= {"negative", "neutral", "positive"}
    by_folder = check_scorer(str(classifier_dir(3)), half="test", max_per_type=2)
    assert by_folder.results["label"].tolist() == by_name.results["label"].tolist()
    assert by_folder.scorer == "regard (classifier-v4-3class)"
    four = check_scorer(str(classifier_dir(4)), half="test", max_per_type=1)
    assert set(four.results["label"]) <= {"negative", "neutral", "positive", "other"}


def test_the_vader_column_in_docs_regard_is_what_the_suite_measures():
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "regard.md").read_text(encoding="utf-8")
    section = doc.split("**Test half** (pass rate", 1)[1].split("| case type", 1)[1].split("\n\n", 1)[0]
    section = "| case type" + section  # the table, up to the blank line after it
    header = section.splitlines()[0]
    column = [c.strip() for c in header.split("|")].index("`vader`")
    rows = {c[1].strip("* "): c for c in ([x.strip() for x in line.split("|")] for line in section.splitlines()
                                           if line.startswith("| ") and not line.startswith("| case type"))}
    rates = check_scorer("vader", half="test").rates
    assert len(rates) == len(rows) == len(case_types()) + 3
    for r in rates.itertuples():
        cells = rows[r.case_type]
        assert int(cells[4]) == r.n, r.case_type
        assert cells[column].startswith(f"{100 * r.pass_rate:.1f} ["), (r.case_type, cells[column])
