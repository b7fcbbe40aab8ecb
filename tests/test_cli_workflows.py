"""`report`, `annotate sample|import` and `train-regard` through the command line: exit codes, output, files."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import accuracy_score, cohen_kappa_score, confusion_matrix

import nlgbias
from nlgbias.annotation import read_sheet
from test_cli import assert_one_line_error, call


@pytest.fixture(scope="module")
def fake_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    nlgbias.run("sheng2019", models=["fake"], samples=4, seed=0, out=out, quiet=True, n_boot=100,
                scorers=["vader", "textblob"])
    return out


def test_report_rerenders_the_page_from_the_stored_outputs(capsys, fake_run):
    page = fake_run / "report.html"
    original = page.read_text()
    page.unlink()
    code, out, err = call(capsys, "report", str(fake_run))
    assert code == 0 and out == f"report: {page}\n" and err == ""
    assert page.read_text() == original


def test_report_names_the_missing_file(capsys, tmp_path):
    code, _, err = call(capsys, "report", str(tmp_path))
    assert_one_line_error(code, err, f"{tmp_path / 'metrics.json'}: missing; run `nlgbias run ... --out {tmp_path}` first")


def test_annotate_sample_then_import_through_the_cli(capsys, fake_run, tmp_path):
    code, out, _ = call(capsys, "annotate", "sample", str(fake_run), "--out", str(tmp_path), "--k-positive", "1",
                        "--k-negative", "1", "--annotators", "a1,a2,a3", "--seed", "3")
    items = pd.read_csv(tmp_path / "items.csv")
    assert code == 0 and out.startswith(f"{len(items)} distinct masked texts; wrote ")
    samples = pd.read_parquet(fake_run / "samples.parquet")
    cells = samples.groupby(["model", "template_id", "group"]).ngroups
    assert 0 < len(items) <= 2 * cells and set(items["vader_label"]) <= {"positive", "negative"}
    # fill the sheets: a1 and a2 agree on every item, a3 always says no_impact
    regard = {i: ("positive" if k % 2 else "negative") for k, i in enumerate(items["id"])}
    for annotator in ("a1", "a2", "a3"):
        path = tmp_path / f"sheet-{annotator}.csv"
        sheet = read_sheet(path)
        sheet["regard"] = sheet["id"].map(regard) if annotator != "a3" else "no_impact"
        sheet["sentiment"] = "neutral"
        sheet.to_csv(path, index=False)
    sheets = [str(tmp_path / f"sheet-{a}.csv") for a in ("a1", "a2", "a3")]
    code, out, err = call(capsys, "annotate", "import", *sheets, "--items", str(tmp_path / "items.csv"),
                          "--out", str(tmp_path / "result"), "--no-classifier-check")
    assert code == 0, err
    result = tmp_path / "result"
    majority = pd.read_csv(result / "regard-3class.csv").set_index("id")
    assert majority.loc[list(regard), "label"].tolist() == list(regard.values())  # two of three agree
    assert majority.loc[list(items["id"]), "text"].tolist() == items["text"].tolist()  # items' text and metadata
    assert list(majority.columns) == ["label", "votes", "n"] + [c for c in items.columns if c != "id"]
    labels = pd.read_csv(result / "labels.csv")
    assert len(labels) == 3 * len(items)
    agreement = json.loads((result / "agreement.json").read_text())
    lines = out.splitlines()
    n = len(items)
    assert lines[:3] == [f"sheet-{a}.csv ({a}): {n} rows labelled, 0 blank rows skipped, 0 exported ids missing"
                         for a in ("a1", "a2", "a3")]
    assert lines[3].startswith(f"regard: Fleiss kappa {agreement['regard']['fleiss_kappa_6']:.2f} ")
    wide = labels.pivot(index="id", columns="annotator", values="regard")
    kappas = [f"{a}-{b} {cohen_kappa_score(wide[a], wide[b]):.2f} (n={n})" for a, b in (("a1", "a2"), ("a1", "a3"), ("a2", "a3"))]
    assert lines[4] == f"  Cohen's kappa per pair: {', '.join(kappas)}"
    assert kappas[0].startswith("a1-a2 1.00")
    assert lines[7:11] == [f"regard-3class: {n} of {n} items kept; 0 ties dropped, 0 with majority 'other' left out",
                           f"regard-4class: {n} of {n} items kept; 0 ties dropped",
                           f"sentiment-3class: {n} of {n} items kept; 0 ties dropped, 0 with majority 'other' left out",
                           f"sentiment-4class: {n} of {n} items kept; 0 ties dropped"]
    assert lines[11:] == [f"wrote labels.csv, agreement.json, regard-3class.csv, regard-4class.csv, sentiment-3class.csv, "
                          f"sentiment-4class.csv, correlations.csv, regard.csv to {result} (regard.csv is for "
                          "train-regard --data or --extra-data)"]
    assert not (result / "classifier-check.json").exists()

    # a3 has labelled only the first three rows of the sheet; a2 has labelled every item but the first
    partial = tmp_path / "partial"
    partial.mkdir()
    for annotator, keep in (("a1", None), ("a2", slice(1, None)), ("a3", slice(0, 3))):
        sheet = read_sheet(tmp_path / f"sheet-{annotator}.csv")
        if keep is not None:
            labelled = sheet.iloc[keep].index
            sheet.loc[~sheet.index.isin(labelled), ["regard", "sentiment"]] = ""
        sheet.to_csv(partial / f"sheet-{annotator}.csv", index=False)
    partial_sheets = [str(partial / f"sheet-{a}.csv") for a in ("a1", "a2", "a3")]
    code, _, err = call(capsys, "annotate", "import", *partial_sheets, "--items", str(tmp_path / "items.csv"),
                        "--out", str(partial / "result"), "--no-classifier-check")
    assert code == 2 and err == f"Error: {partial_sheets[1]}:2: regard is empty (to skip unlabelled rows, pass --allow-blank)\n"
    assert not (partial / "result").exists()
    code, out, err = call(capsys, "annotate", "import", *partial_sheets, "--items", str(tmp_path / "items.csv"),
                          "--out", str(partial / "result"), "--no-classifier-check", "--allow-blank")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[1:3] == [f"sheet-a2.csv (a2): {n - 1} rows labelled, 1 blank rows skipped, 0 exported ids missing",
                          f"sheet-a3.csv (a3): 3 rows labelled, {n - 3} blank rows skipped, 0 exported ids missing"]
    votes = pd.read_csv(partial / "result" / "labels.csv").groupby("id")["regard"].agg(list)
    ties = sum(len(v) == 2 and v[0] != v[1] for v in votes)  # a1 and a3 alone on a2's blank item can disagree
    assert lines[7] == (f"regard-3class: {n - ties} of {n} items kept; {ties} ties dropped, "
                        "0 with majority 'other' left out")


def test_annotate_errors(capsys, fake_run, tmp_path):
    code, _, err = call(capsys, "annotate", "sample", str(tmp_path), "--out", str(tmp_path / "o"))
    assert_one_line_error(code, err, f"{tmp_path / 'samples.parquet'}: missing; give the --out folder of a finished `nlgbias run`")
    code, _, err = call(capsys, "annotate", "sample", str(fake_run), "--out", str(tmp_path / "o"), "--k-neutral", "-1")
    assert_one_line_error(code, err, "--k-neutral -1: must be 0 or more")
    code, _, err = call(capsys, "annotate", "import", str(tmp_path / "s.csv"), "--items", str(tmp_path / "none.csv"),
                        "--out", str(tmp_path / "r"))
    assert_one_line_error(code, err, f"--items {tmp_path / 'none.csv'}: file not found")


def test_train_regard_on_a_small_file_reports_what_it_saved(capsys, tmp_path):
    from nlgbias.scorers.regard import RegardScorer

    texts = {"positive": ["XYZ was a kind doctor.", "XYZ was admired by everyone.", "XYZ was a generous friend."],
             "negative": ["XYZ was a thief.", "XYZ was a liar.", "XYZ was known for cruelty."],
             "neutral": ["XYZ worked as a clerk.", "XYZ had a job as a cashier.", "XYZ lived in a town."]}
    rows = [{"id": f"i{label}{k}", "text": t, "context": "respect", "template_id": "t", "regard_3": label,
             "regard_4": label, "split": "test" if k == 2 else "train"}
            for label, items in texts.items() for k, t in enumerate(items)]
    data = tmp_path / "regard.csv"
    pd.DataFrame(rows).to_csv(data, index=False)
    code, out, _ = call(capsys, "train-regard", "--data", str(data), "--out", str(tmp_path / "clf"), "--seed", "1")
    assert code == 0
    config = json.loads((tmp_path / "clf" / "config.json").read_text())
    first, second = out.splitlines()
    assert first == (f"trained on 6 sentences (train + dev); test accuracy {config['test_accuracy']:.3f}, "
                     f"macro-F1 {config['test_macro_f1']:.3f}; wrote {tmp_path / 'clf'}")
    assert second == f"adapter sha256 {config['adapter_sha256'][:16]}: differs from the shipped classifiers"
    test = [r for r in rows if r["split"] == "test"]
    scored = RegardScorer(tmp_path / "clf").score([r["text"] for r in test])
    accuracy = np.mean([label == r["regard_3"] for label, r in zip(scored["label"], test)])
    assert config["test_accuracy"] == pytest.approx(accuracy)


def test_train_regard_errors(capsys, tmp_path):
    code, _, err = call(capsys, "train-regard", "--data", str(tmp_path / "none.csv"), "--out", str(tmp_path / "o"))
    assert_one_line_error(code, err, f"--data {tmp_path / 'none.csv'}: file not found")
    code, _, err = call(capsys, "train-regard")
    assert code == 2 and "Missing option '--out'" in err


def test_write_comparison_writes_what_train_regard_compare_prints(tmp_path):
    from nlgbias.training.baselines import BagOfWords, SentimentAsRegard
    from nlgbias.training.dataset import load_dataset
    from nlgbias.training.experiment import LABELS, report_markdown, write_comparison

    labels = LABELS[3]
    comparison = write_comparison(load_dataset(), tmp_path, classes=3, seeds=range(1), models={
        "bow-logreg": lambda: BagOfWords(labels), "vader": lambda: SentimentAsRegard("vader", labels)})
    assert (tmp_path / "comparison.md").read_text() == report_markdown(comparison) + "\n"
    stored = json.loads((tmp_path / "comparison.json").read_text())
    assert stored["best"] == comparison["best"] and stored["seeds"] == [0]


def test_annotation_round_trip_sample_fill_import_train_score(capsys, fake_run, tmp_path):
    """sample -> fill sheets -> import -> train-regard --data / --extra-data -> score --classifier."""
    code, _, err = call(capsys, "annotate", "sample", str(fake_run), "--out", str(tmp_path), "--k-positive", "1",
                        "--k-negative", "1", "--annotators", "a1,a2")
    assert code == 0, err
    items = pd.read_csv(tmp_path / "items.csv")
    # the annotators agree: VADER's label as regard, except every third item is neutral (no_impact)
    regard = {i: ("no_impact" if k % 3 == 0 else v) for k, (i, v) in enumerate(zip(items["id"], items["vader_label"]))}
    for annotator in ("a1", "a2"):
        path = tmp_path / f"sheet-{annotator}.csv"
        sheet = read_sheet(path)
        sheet["regard"] = sheet["id"].map(regard)
        sheet["sentiment"] = sheet["regard"].replace({"no_impact": "neutral"})
        sheet.to_csv(path, index=False)
    result = tmp_path / "result"
    code, out, err = call(capsys, "annotate", "import", str(tmp_path / "sheet-a1.csv"), str(tmp_path / "sheet-a2.csv"),
                          "--items", str(tmp_path / "items.csv"), "--out", str(result))
    assert code == 0, err

    # the shipped classifiers (looked up by name) against the majority labels, checked with sklearn
    checks = {c["scorer"]: c for c in json.loads((result / "classifier-check.json").read_text())}
    for scorer, task in (("regard", "regard-3class"), ("regard4", "regard-4class")):
        majority = pd.read_csv(result / f"{task}.csv")
        predicted = nlgbias.score(majority["text"].tolist(), scorer)["label"]
        labels = checks[scorer]["labels"]
        assert labels[:3] == ["negative", "neutral", "positive"]
        accuracy = accuracy_score(majority["label"], predicted)
        assert checks[scorer]["accuracy"] == pytest.approx(accuracy) and checks[scorer]["n"] == len(majority)
        matrix = confusion_matrix(majority["label"], predicted, labels=labels)
        assert checks[scorer]["confusion"] == matrix.tolist()
        header = [line for line in out.splitlines() if line.startswith(f"{scorer} classifier (")]
        assert header == [f"{scorer} classifier ({checks[scorer]['version']}) vs your {task} majority labels: "
                          f"accuracy {accuracy:.3f} ({int(matrix.trace())} of {len(majority)} items)"]
        at = out.splitlines().index(header[0])
        assert out.splitlines()[at + 2].split() == [labels[0], *map(str, matrix[0])]
    compared = pd.read_csv(result / "classifier-check.csv")
    assert len(compared) == sum(c["n"] for c in checks.values())
    assert compared["correct"].sum() == sum(c["correct"] for c in checks.values())
    table = pd.read_csv(result / "regard.csv").set_index("id")
    expected_3 = {i: {"no_impact": "neutral"}.get(v, v) for i, v in regard.items()}
    assert table["regard_3"].to_dict() == expected_3
    assert (table["regard_a1"].to_dict(), table["regard_a2"].to_dict()) == (regard, regard)
    assert table.loc[list(items["id"]), "text"].tolist() == items["text"].tolist()
    assert set(table["split"]) <= {"train", "dev", "test"} and (table["split"] == "train").mean() >= 0.5

    # --data: the user's own table alone
    code, out, err = call(capsys, "train-regard", "--data", str(result / "regard.csv"), "--out", str(tmp_path / "own"),
                          "--epochs", "1")
    assert code == 0, err
    n_fit = int(table["split"].isin(["train", "dev"]).sum())
    assert out.startswith(f"trained on {n_fit} sentences (train + dev); ")

    # --extra-data: appended to a base table's training split (here a small base; by default the shipped data)
    base = pd.DataFrame([{"id": f"b{k}", "text": t, "context": "respect", "template_id": "t", "regard_3": label,
                          "regard_4": label, "split": split}
                         for k, (t, label, split) in enumerate([("XYZ was a thief.", "negative", "train"),
                                                                ("XYZ was kind.", "positive", "train"),
                                                                ("XYZ was a liar.", "negative", "test")])])
    base.to_csv(tmp_path / "base.csv", index=False)
    code, out, err = call(capsys, "train-regard", "--data", str(tmp_path / "base.csv"), "--extra-data",
                          str(result / "regard.csv"), "--out", str(tmp_path / "plus"), "--epochs", "1", "--holdout", "0")
    assert code == 0, err
    assert out.startswith(f"trained on {2 + len(table)} sentences (train + dev; {len(table)} of them yours); "
                          "test accuracy ")
    config = json.loads((tmp_path / "plus" / "config.json").read_text())
    assert config["train_items"] == 2 + len(table) and config["settings"]["epochs"] == 1

    # score with the classifier just trained
    (tmp_path / "texts.txt").write_text("The woman was a thief.\n\n")
    code, _, err = call(capsys, "score", "--scorer", "regard", "--classifier", str(tmp_path / "plus"),
                        "--input", str(tmp_path / "texts.txt"), "--output", str(tmp_path / "scored.jsonl"),
                        "--mask", "The woman")
    assert code == 0, err
    from nlgbias.scorers.regard import RegardScorer

    expected = RegardScorer(tmp_path / "plus").score(["XYZ was a thief."])
    lines = [json.loads(line) for line in (tmp_path / "scored.jsonl").read_text().splitlines()]
    assert lines[0]["label"] == expected["label"][0] and lines[1]["label"] is None
    assert lines[0]["scores"]["negative"] == pytest.approx(expected["details"][0]["negative"])
    shipped = RegardScorer().score(["XYZ was a thief."])["details"][0]["negative"]
    assert lines[0]["scores"]["negative"] != pytest.approx(shipped, abs=1e-6)  # not the shipped classifier


def test_train_regard_extra_data_appends_to_the_shipped_training_split(tmp_path):
    from nlgbias.training.dataset import load_dataset, training_data

    extra = pd.DataFrame([{"id": "x1", "text": "XYZ was brave.", "context": "respect", "template_id": "t",
                           "regard_3": "positive", "regard_4": "positive", "split": "test"}])
    extra.to_csv(tmp_path / "regard.csv", index=False)
    shipped = load_dataset()
    combined = training_data(extra=[tmp_path / "regard.csv"])
    assert len(combined) == len(shipped) + 1
    added = combined.iloc[-1]
    assert (added["id"], added["split"], added["text"]) == ("extra1:x1", "train", "XYZ was brave.")
    pd.testing.assert_frame_equal(combined.iloc[:-1][shipped.columns].reset_index(drop=True), shipped)


def test_details_are_json_objects_in_jsonl_json_text_in_parquet_and_dicts_from_score(fake_run):
    samples = pd.read_parquet(fake_run / "samples.parquet")
    rows = [json.loads(line) for line in (fake_run / "samples.jsonl").read_text().splitlines()]
    assert len(rows) == len(samples)
    for scorer in ("vader", "textblob"):
        column = f"{scorer}_details"
        assert all(isinstance(v, str) for v in samples[column].dropna())
        assert [r[column] for r in rows] == [json.loads(v) if isinstance(v, str) else None for v in samples[column]]
        assert all(isinstance(r[column], dict) for r in rows if r["scored_text"])
        direct = nlgbias.score(samples["scored_text"].head(5).tolist(), scorer=scorer)
        assert [set(d) for d in direct["details"]] == [set(r[column]) for r in rows[:5]]
        for got, expected in zip(direct["details"], rows[:5]):
            assert got == pytest.approx(expected[column])
