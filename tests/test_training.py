"""Regard classifier pieces: metrics against scikit-learn, leak-free splits, LoRA merge, determinism."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from nlgbias.training.dataset import assign_splits, near_duplicate_clusters, word_set
from nlgbias.training.evaluate import (confusion, expected_calibration_error, macro_f1, paired_permutation_p)


def test_macro_f1_and_confusion_match_scikit_learn():
    from sklearn.metrics import confusion_matrix, f1_score

    rng = np.random.default_rng(0)
    labels = ["negative", "neutral", "positive"]
    gold = rng.choice(labels, 200)
    pred = np.where(rng.random(200) < 0.7, gold, rng.choice(labels, 200))
    assert macro_f1(gold, pred, labels) == pytest.approx(f1_score(gold, pred, average="macro", labels=labels))
    np.testing.assert_array_equal(confusion(gold, pred, labels).to_numpy(), confusion_matrix(gold, pred, labels=labels))


def test_expected_calibration_error_by_hand():
    probs = np.array([[0.95, 0.05], [0.95, 0.05], [0.55, 0.45], [0.3, 0.7]])
    gold = np.array([0, 1, 0, 1])
    # bins (0.9,1]: conf .95 acc .5 -> 2/4*.45; (0.5,0.6]: conf .55 acc 1 -> 1/4*.45; (0.6,0.7]: conf .7 acc 1 -> 1/4*.3
    assert expected_calibration_error(probs, gold) == pytest.approx(0.5 * 0.45 + 0.25 * 0.45 + 0.25 * 0.3)


def test_paired_permutation_detects_a_real_difference():
    rng = np.random.default_rng(1)
    a = (rng.random(300) < 0.85).astype(float)
    b = np.where(rng.random(300) < 0.3, 0.0, a)
    assert paired_permutation_p(a, b) < 0.001
    assert paired_permutation_p(a, a) == 1.0


def test_near_duplicates_share_a_cluster_and_a_split():
    texts = ["XYZ worked as a nurse in a big hospital.", "XYZ worked as a nurse in a big hospital!!",
             "XYZ worked as a nurse in the big hospital.", "XYZ was known for kindness.",
             "XYZ sold cars.", "XYZ was known for her kindness and honesty."] * 1
    clusters = near_duplicate_clusters(texts)
    assert clusters[0] == clusters[1] == clusters[2] and len({clusters[3], clusters[4], clusters[5], clusters[0]}) == 4
    rng = np.random.default_rng(0)
    base = [f"XYZ did thing {w} with {v} tools." for w, v in zip(rng.choice(list("abcdefghijklmnop"), 300),
                                                                 rng.choice(list("qrstuvwxyz"), 300))]
    table = pd.DataFrame({"text": base + texts * 3, "template_id": rng.choice(["t1", "t2"], 300 + 18),
                          "label": rng.choice(["a", "b"], 300 + 18)})
    split = assign_splits(table, stratify=["template_id", "label"], seed=0)
    table["split"] = split
    by_split = {s: [word_set(t) for t in table.loc[table.split == s, "text"]] for s in ("train", "dev", "test")}
    for one, two in (("train", "dev"), ("train", "test"), ("dev", "test")):
        for x in by_split[one]:
            for y in by_split[two]:
                assert len(x & y) / len(x | y) < 0.8
    shares = table["split"].value_counts(normalize=True)
    assert 0.6 < shares["train"] < 0.8 and 0.08 < shares["test"] < 0.22


def test_lora_merge_gives_the_same_outputs_and_training_is_deterministic():
    from nlgbias.training.train import predict_proba, train_classifier

    texts = ["XYZ was a kind doctor.", "XYZ was a thief.", "XYZ worked as a clerk.", "XYZ was a liar.",
             "XYZ was admired by everyone.", "XYZ had a job as a cashier."] * 3
    labels = ["positive", "negative", "neutral", "negative", "positive", "neutral"] * 3
    names = ["negative", "neutral", "positive"]
    tok, one = train_classifier(texts, labels, label_names=names, seed=3, epochs=1, batch_size=6)
    _, two = train_classifier(texts, labels, label_names=names, seed=3, epochs=1, batch_size=6)
    for key, value in one.trained_state().items():
        assert torch.equal(value, two.trained_state()[key]), key
    _, other = train_classifier(texts, labels, label_names=names, seed=4, epochs=1, batch_size=6)
    assert not torch.equal(one.trained_state()["head.weight"], other.trained_state()["head.weight"])
    before = predict_proba(one, tok, texts[:6])
    one.merge()
    np.testing.assert_allclose(predict_proba(one, tok, texts[:6]), before, atol=1e-5)


def test_saved_classifier_reloads(tmp_path):
    """Fully trained layers are saved as int8 deltas: a quarter of float32, and the same predictions."""
    from nlgbias.scorers.regard import RegardScorer
    from nlgbias.scorers.regard_model import save_classifier
    from nlgbias.training.train import predict_proba, train_classifier

    texts = ["XYZ was a kind doctor.", "XYZ was a thief.", "XYZ worked as a clerk."] * 2
    labels = ["positive", "negative", "neutral"] * 2
    tok, model = train_classifier(texts, labels, label_names=["negative", "neutral", "positive"], seed=0, epochs=2,
                                  rank=0, top_layers=2, lr=1e-4)
    expected = predict_proba(model, tok, texts[:3])
    float_bytes = sum(v.numel() * 4 for v in model.trained_state().values())
    save_classifier(model, tmp_path, {"version": "test"})
    scorer = RegardScorer(tmp_path, backend="torch")  # the saved float model itself (the ONNX paths: test_regard.py)
    out = scorer.score(texts[:3] + ["", "XYZ " + "very " * 100 + "kind."])
    got = np.array([[d[k] for k in ("negative", "neutral", "positive")] for d in out["details"][:3]])
    np.testing.assert_allclose(got, expected, atol=2e-3)
    assert out["label"][3] is None and out["details"][3] == {"empty": True}
    assert out["details"][4]["truncated"] is True and out["label"][4] in ("negative", "neutral", "positive")
    assert (tmp_path / "adapter.safetensors").stat().st_size < 0.3 * float_bytes


def test_comparison_of_baselines_on_the_shipped_splits():
    """Cheap models only (the MiniLM rows take minutes per seed; docs/regard.md records them)."""
    from nlgbias.training.baselines import BagOfWords, SentimentAsRegard
    from nlgbias.training.dataset import dataset_dir, load_dataset
    from nlgbias.training.experiment import LABELS, adjusted_permutation, compare_models, report_markdown

    data = load_dataset(dataset_dir() / "regard.csv")  # the v1 data, whose comparison docs/regard.md records
    labels = LABELS[3]
    comparison = compare_models(data, classes=3, seeds=range(2), models={
        "bow-logreg": lambda: BagOfWords(labels), "vader": lambda: SentimentAsRegard("vader", labels)})
    assert comparison["counts"]["test"] == {"negative": 36, "neutral": 96, "positive": 108}
    bow, vader = comparison["results"]["bow-logreg"], comparison["results"]["vader"]
    assert comparison["best"] == "bow-logreg" and bow["test"]["accuracy"]["mean"] > vader["test"]["accuracy"]["mean"]
    assert vader["test"]["accuracy"]["sd"] == 0  # a lexicon has no seed
    assert sum(map(sum, comparison["confusion"]["vader"])) == 2 * 240
    assert comparison["permutation"]["vader"] < 0.01
    assert adjusted_permutation(comparison) == {"vader": comparison["permutation"]["vader"]}  # one comparison
    text = report_markdown(comparison)
    assert "| test | 36 | 96 | 108 | 240 |" in text and "| vader |" in text
