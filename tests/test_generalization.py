"""Leave-one-source-out evaluation and the v2 annotation guidelines."""

import numpy as np
import pandas as pd

from nlgbias.annotation.categories import REGARD
from nlgbias.annotation.sheets import guidelines_html, worked_examples
from nlgbias.resources import data_path
from nlgbias.training.baselines import BagOfWords
from nlgbias.training.evaluate import accuracy
from nlgbias.training.generalization import leave_one_source_out, recall


class Recording(BagOfWords):
    """The bag-of-words baseline, remembering what it was trained on."""

    seen: list[set[str]] = []

    def fit(self, texts, labels, seed=0):
        Recording.seen.append(set(texts))
        return super().fit(texts, labels, seed)


def toy_dataset() -> pd.DataFrame:
    words = {"negative": "was arrested for theft", "neutral": "worked at a shop", "positive": "was admired by all"}
    rows = []
    for source in ("a", "b", "c"):
        for k in range(12):
            label = list(words)[k % 3]
            rows.append({"id": f"{source}{k}", "text": f"XYZ {words[label]} in {source} {k}", "source": source,
                         "regard_3": label, "split": ("train", "dev", "test")[k % 3 if k < 9 else 0],
                         "template_id": "t", "context": "c"})
    return pd.DataFrame(rows)


def test_leave_one_source_out_never_trains_on_the_held_out_source():
    data = toy_dataset()
    Recording.seen = []
    table = leave_one_source_out(data, make_model=lambda labels: Recording(labels))
    assert table["held_out"].tolist() == ["a", "b", "c"]
    assert table["n_test"].tolist() == [12, 12, 12]  # every item of the held-out source, whatever its split
    fit = data[data["split"].isin(["train", "dev"])]
    for source, seen in zip("abc", Recording.seen):
        assert seen == set(fit.loc[fit["source"] != source, "text"])
    # The labels are carried by words shared across sources, so a bag of words transfers perfectly.
    assert np.allclose(table["accuracy"], 1.0) and np.allclose(table["negative_recall"], 1.0)


def test_recall_by_hand():
    gold = ["negative", "negative", "negative", "neutral", "positive"]
    pred = ["negative", "neutral", "negative", "negative", "positive"]
    assert recall(gold, pred, "negative") == 2 / 3
    assert accuracy(gold, pred) == 0.6
    assert np.isnan(recall(gold, pred, "other"))


def test_worked_examples_use_regard_categories_and_cover_the_hard_cases():
    guide = worked_examples()
    examples = [e for topic in guide["topics"] for e in topic["examples"]]
    assert len(examples) >= 30
    assert {e["label"] for e in examples} <= set(REGARD)
    assert {"crime", "arrest", "occupation", "poverty", "health", "fired", "victim", "mixed", "nonsense"} <= {
        t["id"] for t in guide["topics"]}
    page = guidelines_html()
    assert "hard cases" in page and "XYZ was caught shoplifting a pair of shoes." in page
    assert page.count("<tr><td>") == len(examples)


def regard_samples(low_share: dict[str, float], n: int = 200, seed: int = 1) -> pd.DataFrame:
    """A samples table whose regard probabilities are low-confidence in the given share per group."""
    rng = np.random.default_rng(seed)
    rows = []
    for group, share in low_share.items():
        for i in range(n):
            top = 0.45 if rng.random() < share else 0.9
            rest = (1 - top) / 2
            details = {"negative": rest, "neutral": top, "positive": rest, "truncated": False}
            rows.append({"model": "m", "context": "respect", "group": group, "generation_id": f"{group}{i}",
                         "scored_text": f"XYZ text {i}", "regard_label": "neutral",
                         "regard_details": __import__("json").dumps(details)})
    return pd.DataFrame(rows)


def test_low_confidence_shares_are_per_group_and_flag_a_real_difference():
    from nlgbias.metrics.significance import permutation_p
    from nlgbias.annotation.sample import hard_examples
    from nlgbias.metrics.validity import low_confidence, max_probability

    samples = regard_samples({"a": 0.5, "b": 0.05, "c": 0.5})
    shares, gaps = low_confidence(samples, pairs=[("a", "b"), ("a", "c")], n_boot=200)
    p_max = samples["regard_details"].map(max_probability)
    for _, row in shares.iterrows():
        mine = p_max[samples["group"] == row["group"]]
        assert row["n"] == len(mine) and row["k"] == int((mine < 0.6).sum())
    ab = gaps.set_index("group_b").loc["b"]
    ac = gaps.set_index("group_b").loc["c"]
    assert ab["p"] == permutation_p(ab["k_a"], ab["n_a"], ab["k_b"], ab["n_b"])
    assert bool(ab["flagged"]) and ab["diff"] > 0.3
    assert not bool(ac["flagged"])
    examples = hard_examples(samples, k=2)
    assert (examples["p_max"] < 0.6).all() and examples.groupby("group").size().max() <= 2


def test_annotate_sample_low_confidence_writes_only_hard_texts(tmp_path):
    import subprocess
    import sys

    samples = regard_samples({"a": 0.3, "b": 0.3}, n=40).assign(
        template_id="t", is_empty=False, vader_label="neutral")
    samples["scored_text"] = [f"XYZ text {i}" for i in range(len(samples))]
    run = tmp_path / "run"
    run.mkdir()
    samples.to_parquet(run / "samples.parquet")
    done = subprocess.run([sys.executable, "-m", "nlgbias", "annotate", "sample", str(run), "--out",
                           str(tmp_path / "hard"), "--low-confidence", "5"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    items = pd.read_csv(tmp_path / "hard" / "items.csv")
    from nlgbias.metrics.validity import max_probability
    chosen = samples.set_index("scored_text").loc[items["text"]]
    assert (chosen["regard_details"].map(max_probability) < 0.6).all()
    assert items.groupby("group").size().tolist() == [5, 5]


def test_a_regard_run_reports_its_validity_panel(tmp_path, monkeypatch):
    import nlgbias
    from nlgbias.metrics.validity import max_probability

    monkeypatch.chdir(tmp_path)
    result = nlgbias.run("sheng2019", models=["fake"], samples=2, n_boot=100, seed=0, out="run", quiet=True)
    shares = result.results.table("regard_confidence")
    samples = result.samples
    assert "regard_validity" in result.manifest["statistics"]["analyses"]  # automatic: the suite does not list it
    for _, row in shares.iterrows():
        mine = samples[(samples["context"] == row["context"]) & (samples["group"] == row["group"])]
        p_max = mine["regard_details"].map(max_probability).dropna()
        assert row["n"] == len(p_max) and row["k"] == int((p_max < 0.6).sum())
    gaps = result.results.table("regard_confidence_gaps")
    assert {tuple(p) for p in gaps[["group_a", "group_b"]].drop_duplicates().values} == {
        ("man", "woman"), ("Black", "White"), ("gay", "straight")}
    page = (tmp_path / "run" / "report.html").read_text()
    assert "How far to trust the regard numbers" in page and "regard-4+" in page
    assert "On 3 annotated sets it never trained on (" in page  # release 4: text it never saw
    assert ("Its recipe, trained without one model-decoding source (smollm2/hot) and tested on its 2393 annotated "
            "sentences, agrees with the majority label 80.7% of the time") in page  # one hold-out: no range
    # its behavioural-test targets, from the shipped checklist.json, whose version is the scorer's own
    import json

    from nlgbias.resources import data_path
    from nlgbias.scorers import get_scorer

    shipped = json.loads(data_path("regard", "checklist.json").read_text())["4"]
    assert shipped["version"] == get_scorer("regard").version  # rerun scripts/checklist/run_scorers.py if not
    illegal = next(t for t in shipped["targets"] if t["case_type"] == "mft_illegal_job")
    assert f"MFT pass rate on illegal and explicit occupations {100 * illegal['value']:.1f}%" in page
    assert "target at least 95%: <b>not met</b>" in page


def test_the_validity_panel_names_flagged_comparisons():
    from nlgbias.metrics.results import Results
    from nlgbias.metrics.validity import low_confidence
    from nlgbias.report.sections import regard_validity

    samples = regard_samples({"a": 0.5, "b": 0.05}).assign(context="respect")
    shares, gaps = low_confidence(samples, pairs=[("a", "b")], n_boot=100)
    section = regard_validity(Results({"regard_confidence": shares, "regard_confidence_gaps": gaps}, {}), samples,
                              {"scorers": [{"name": "regard", "version": "regard-test"}]})
    assert section["version"] == "regard-test" and len(section["flagged"]) == 1
    assert section["release"] == 4  # not a release's version string: the default release
    unseen = section["held_out"]
    assert [h["by"] for h in unseen] == ["unseen text", "source"] and unseen[0]["kinds"] == 3
    assert unseen[0]["n"] > 1000 and 0.6 < unseen[0]["accuracy"][0] <= unseen[0]["accuracy"][1] < 1
    recipe = unseen[1]  # the student's recipe retrained without SmolLM2 at temperature 1.0
    assert recipe["kinds"] == 1 and recipe["names"] == "smollm2/hot" and recipe["n"] == 2393
    assert recipe["accuracy"][0] == recipe["accuracy"][1] and 0.7 < recipe["accuracy"][0] < 0.9
    v2 = regard_validity(Results({"regard_confidence": shares, "regard_confidence_gaps": gaps}, {}), samples,
                         {"scorers": [{"name": "regard", "version": "regard-2+0123456789ab+onnx-int8-checked"}]})
    assert v2["release"] == 2
    by = {h["by"]: h for h in v2["held_out"]}
    assert by["source"]["kinds"] == 4 and by["family"]["kinds"] == 3
    three_class = pd.read_csv(data_path("regard", "regard-v2.csv"))["regard_3"].isin(["negative", "neutral", "positive"])
    assert by["source"]["n"] == by["family"]["n"] == three_class.sum()  # every item has one source, one family
    assert 0.7 < by["source"]["accuracy"][0] <= by["source"]["accuracy"][1] < 1
    assert all(e["p_max"] < 0.6 for e in section["examples"])
    v1 = regard_validity(Results({"regard_confidence": shares, "regard_confidence_gaps": gaps}, {}), samples,
                         {"scorers": [{"name": "regard", "version": "regard-1+252d031efdc4+onnx-int8-checked"}]})
    assert v1["release"] == 1 and v1["held_out"][0]["by"] == "new items" and v1["held_out"][0]["n"] > 3000
    assert v1["own_test_accuracy"] != section["own_test_accuracy"]
