"""The annotation round trip ends in a run: sample -> label -> import -> train-regard --extra-data (progress,
how many of your items were used, accuracy on your held-out items) -> nlgbias run --scorer regard:DIR."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import nlgbias
from nlgbias.annotation import read_sheet
from nlgbias.scorers.regard import RegardScorer
from test_cli import assert_one_line_error, call

BASE = [("XYZ was a thief.", "negative", "train"), ("XYZ was kind.", "positive", "train"),
        ("XYZ worked as a clerk.", "neutral", "train"), ("XYZ was a liar.", "negative", "test")]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A fake run, its annotation (two annotators; every fifth item a tie), and a classifier trained on it."""
    folder = tmp_path_factory.mktemp("own")
    nlgbias.run("sheng2019", models=["fake"], samples=4, seed=0, out=folder / "run", quiet=True, n_boot=100,
                scorers=["vader"])
    from nlgbias.cli import main

    def run_cli(*args) -> tuple[int, str, str]:
        import contextlib
        import io

        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(list(args))
                code = 0
            except SystemExit as exc:
                code = int(exc.code or 0)
        return code, out.getvalue(), err.getvalue()

    code, _, err = run_cli("annotate", "sample", str(folder / "run"), "--out", str(folder / "ann"), "--k-positive", "2",
                           "--k-negative", "2", "--annotators", "a1,a2")
    assert code == 0, err
    items = pd.read_csv(folder / "ann" / "items.csv")
    agreed = {i: ("no_impact" if k % 3 == 0 else v) for k, (i, v) in enumerate(zip(items["id"], items["vader_label"]))}
    ties = set(items["id"][::5])
    for annotator in ("a1", "a2"):
        path = folder / "ann" / f"sheet-{annotator}.csv"
        sheet = read_sheet(path)
        sheet["regard"] = [("positive" if annotator == "a1" else "negative") if i in ties else agreed[i]
                           for i in sheet["id"]]
        sheet["sentiment"] = sheet["regard"].replace({"no_impact": "neutral"})
        sheet.to_csv(path, index=False)
    code, _, err = run_cli("annotate", "import", str(folder / "ann" / "sheet-a1.csv"),
                           str(folder / "ann" / "sheet-a2.csv"), "--items", str(folder / "ann" / "items.csv"),
                           "--out", str(folder / "result"), "--no-classifier-check")
    assert code == 0, err
    pd.DataFrame([{"id": f"b{k}", "text": t, "context": "respect", "template_id": "t", "regard_3": label,
                   "regard_4": label, "split": split} for k, (t, label, split) in enumerate(BASE)]).to_csv(
        folder / "base.csv", index=False)
    code, out, err = run_cli("train-regard", "--data", str(folder / "base.csv"), "--extra-data",
                             str(folder / "result" / "regard.csv"), "--out", str(folder / "clf"), "--epochs", "1")
    assert code == 0, err
    return folder, out, err


def test_train_regard_says_how_many_of_your_items_it_used_and_how_it_does_on_them(trained):
    folder, out, err = trained
    yours = pd.read_csv(folder / "result" / "regard.csv")
    labelled = yours[yours["regard_3"].isin(["negative", "neutral", "positive"])]
    assert 0 < len(labelled) < len(yours)  # the ties have no majority label
    held = pd.read_csv(folder / "clf" / "own_test.csv")
    assert 0 < len(held) <= math.floor(0.2 * len(yours))  # --holdout 0.2 of the rows, those with a label kept
    originals = held["id"].str.split(":", n=1).str[1]
    assert set(originals) <= set(labelled["id"])
    assert held["label"].tolist() == labelled.set_index("id").loc[originals, "regard_3"].tolist()
    config = json.loads((folder / "clf" / "config.json").read_text())
    trained_yours = len(labelled) - len(held)
    assert config["train_items"] == 3 + trained_yours  # the base's train rows plus yours not held out

    mine = RegardScorer(folder / "clf", backend="torch").score(held["text"].tolist())["label"]
    shipped = RegardScorer(backend="torch").score(held["text"].tolist())["label"]
    accuracy, shipped_accuracy = np.mean(mine == held["label"]), np.mean(shipped == held["label"])
    assert config["own_test_accuracy"] == pytest.approx(accuracy)
    assert config["shipped_own_test_accuracy"] == pytest.approx(shipped_accuracy)
    assert held["predicted"].tolist() == mine.tolist() and held["shipped_predicted"].tolist() == shipped.tolist()
    first, second, third = out.splitlines()
    assert first.startswith(f"trained on {3 + trained_yours} sentences (train + dev; {trained_yours} of them yours); "
                            f"test accuracy {config['test_accuracy']:.3f}, macro-F1 {config['test_macro_f1']:.3f}; "
                            f"your {len(held)} held-out items: accuracy {accuracy:.3f}, ")
    assert first.endswith(f"(the shipped classifier: accuracy {shipped_accuracy:.3f}); wrote {folder / 'clf'}")
    assert second == (f"your items in {folder / 'result' / 'regard.csv'}: {len(yours)} rows, {len(labelled)} with a "
                      f"3-class regard label: {trained_yours} trained on, {len(held)} held out to test (each with "
                      f"both predictions in {folder / 'clf' / 'own_test.csv'}); {len(yours) - len(labelled)} left out "
                      f"(no majority label in this view)")
    assert third.startswith("adapter sha256 ")
    total = config["train_items"]  # one epoch: the bar counts every training sentence once
    assert "train regard: 100%" in err and f"{total}/{total}" in err
    assert "your held-out items: 100%" in err


def test_a_run_scores_with_your_classifier_and_records_it(trained, capsys):
    folder, _, _ = trained
    clf = folder / "clf"
    code, out, err = call(capsys, "run", "sheng2019", "--model", "fake", "--samples", "2", "--scorer",
                          f"regard:{clf}", "--scorer", "vader", "--n-boot", "100", "--out", str(folder / "run2"),
                          "--quiet")
    assert code == 0, err
    manifest = json.loads((folder / "run2" / "manifest.json").read_text())
    entry = next(s for s in manifest["scorers"] if s["name"] == "regard")
    assert entry["classifier"]["path"] == str(clf.resolve())
    assert entry["classifier"]["adapter_sha256"] == hashlib.sha256((clf / "adapter.safetensors").read_bytes()).hexdigest()
    assert entry["version"] == RegardScorer(clf).version != RegardScorer().version
    samples = pd.read_parquet(folder / "run2" / "samples.parquet")
    expected = RegardScorer(clf).score(samples["scored_text"].tolist())["label"]
    assert samples["regard_label"].tolist() == expected.tolist()
    assert "regard_confidence" in json.loads((folder / "run2" / "metrics.json").read_text())["meta"]["columns"]
    page = (folder / "run2" / "report.html").read_text()
    panel = page.split("How far to trust the regard numbers", 1)[1]
    config = json.loads((clf / "config.json").read_text())
    assert f"Your own classifier</b>, read from <code>{clf.resolve()}</code>" in panel
    assert f"On your {config['n_own_test']} held-out items: {100 * config['own_test_accuracy']:.1f}%" in panel
    # a second run with the shipped classifier is another run id; the same folder resumes
    again = nlgbias.run("sheng2019", models=["fake"], samples=2, scorers=[f"regard:{clf}", "vader"], n_boot=100,
                        out=folder / "run2", quiet=True)
    assert again.generated == 0 and again.rebuilt == [] and again.run_id == manifest["run_id"]


def test_your_classifier_errors_name_the_scorer_option(trained, capsys, tmp_path):
    folder, _, _ = trained
    clf = folder / "clf"
    code, _, err = call(capsys, "run", "sheng2019", "--model", "fake", "--samples", "1", "--scorer", "regard",
                        "--scorer", f"regard:{clf}", "--out", str(tmp_path / "x"))
    assert_one_line_error(code, err, f"--scorer regard:{clf}: scores as regard, like --scorer regard; give one of "
                                     "the two")
    code, _, err = call(capsys, "run", "sheng2019", "--model", "fake", "--samples", "1", "--scorer",
                        f"regard:{tmp_path / 'none'}", "--out", str(tmp_path / "x"))
    assert_one_line_error(code, err, f"--scorer regard:{tmp_path / 'none'}: no classifier there (no "
                                     f"{tmp_path / 'none' / 'adapter.safetensors'}); give the --out folder of "
                                     f"`nlgbias train-regard`")
    code, _, err = call(capsys, "run", "sheng2019", "--model", "fake", "--samples", "1", "--scorer",
                        f"regard4:{clf}", "--out", str(tmp_path / "x"))
    assert_one_line_error(code, err, f"--scorer regard4:{clf}: a 3-class classifier; regard4 takes a 4-class one "
                                     f"(use regard:{clf}, or train with --classes 4)")
    assert not Path(tmp_path / "x" / "store.sqlite").exists()


def test_plan_counts_your_classifier_as_a_regard_scorer():
    mine = nlgbias.plan("sheng2019", mde=10, scorers=["regard:build/regard-plus", "vader"])
    shipped = nlgbias.plan("sheng2019", mde=10, scorers=["regard", "vader"])
    assert (mine.samples_per_prompt, mine.n_comparisons) == (shipped.samples_per_prompt, shipped.n_comparisons)
