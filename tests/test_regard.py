"""The shipped regard classifiers, the two-list comparison, and the 4-class label in run metrics."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import nlgbias
from nlgbias.metrics.compare import probability_difference

KIND = ["XYZ was a brilliant and kind doctor who helped everyone.", "XYZ was admired for honesty and courage.",
        "XYZ was known for generosity to the poor.", "XYZ was a respected and talented teacher."]
CRUEL = ["XYZ was a thief and a liar.", "XYZ was known for cruelty to animals.",
         "XYZ was a violent criminal.", "XYZ was hated for cheating friends."]


def test_four_class_scorer_gives_four_probabilities():
    out = nlgbias.score(KIND[:1] + CRUEL[:1] + ["XYZ the the banana sky sky of."], scorer="regard4")
    assert list(out["label"][:2]) == ["positive", "negative"]
    for details in out["details"]:
        assert set(details) == {"negative", "neutral", "positive", "other", "truncated"}
        assert sum(details[k] for k in ("negative", "neutral", "positive", "other")) == pytest.approx(1, abs=1e-5)


def test_compare_regard_finds_the_difference_and_not_a_false_one():
    table = nlgbias.compare_regard(KIND, CRUEL, n_boot=500).set_index("label")
    assert table.loc["positive", "diff"] > 0.5 and table.loc["negative", "diff"] < -0.5
    assert table.loc["positive", "ci_low"] > 0 and table.loc["positive", "p"] < 0.05
    assert (table["n_a"] == 4).all() and (table["n_b"] == 4).all()
    same = nlgbias.compare_regard(KIND, KIND, n_boot=200)
    assert (same["diff"] == 0).all() and (same["p"] == 1).all()


def test_probability_difference_matches_the_definition():
    rng = np.random.default_rng(0)
    a, b = rng.dirichlet([2, 1, 1], 60), rng.dirichlet([1, 1, 2], 80)
    labels = ["negative", "neutral", "positive"]
    table = probability_difference([dict(zip(labels, r)) for r in a], [dict(zip(labels, r)) for r in b],
                                   labels=labels, n_boot=2000).set_index("label")
    np.testing.assert_allclose(table["diff"], a.mean(axis=0) - b.mean(axis=0))
    # with 60 and 80 items the bootstrap CI is close to Welch's t interval
    for j, label in enumerate(labels):
        t = stats.ttest_ind(a[:, j], b[:, j], equal_var=False)
        low, high = t.confidence_interval()
        assert table.loc[label, "ci_low"] == pytest.approx(low, abs=0.02)
        assert table.loc[label, "ci_high"] == pytest.approx(high, abs=0.02)
        assert table.loc[label, "p"] == pytest.approx(t.pvalue, abs=0.05)  # permutation vs Welch
    with pytest.raises(ValueError, match="label 'other' missing"):
        probability_difference([{"negative": 1.0}], [{"negative": 1.0}], labels=["other"])


def test_run_metrics_keep_the_other_label_of_the_four_class_scorer():
    from nlgbias.analyses import AnalysisOptions, RunTables, run_analyses
    from nlgbias.suites import load_suite

    rng = np.random.default_rng(0)
    rows = []
    for scorer, labels in (("regard4", ["negative", "neutral", "other", "positive"]), ("vader", ["negative", "neutral", "positive"])):
        for group in ("man", "woman"):
            for i, label in enumerate(rng.choice(labels, 40)):
                rows.append({"generation_id": f"{scorer}{group}{i}", "model": "m", "context": "respect", "group": group,
                             "is_empty": False, "scorer": scorer, "label": label})
    scored = pd.DataFrame(rows)
    suite = load_suite("sheng2019")
    results = run_analyses(["shares"], RunTables(scored, scored, suite), AnalysisOptions(n_boot=100))
    shares = results.shares
    assert results.meta["labels"] == ["negative", "neutral", "other", "positive"]
    totals = shares.groupby(["scorer", "group"])["share"].sum()
    np.testing.assert_allclose(totals, 1.0)
    four = shares[(shares["scorer"] == "regard4") & (shares["group"] == "man")].set_index("label")
    counted = scored[(scored["scorer"] == "regard4") & (scored["group"] == "man")]["label"].value_counts()
    assert four.loc["other", "n"] == 40 and four.loc["other", "share"] == pytest.approx(counted["other"] / 40)
    assert (shares[(shares["scorer"] == "vader") & (shares["label"] == "other")]["share"] == 0).all()


def test_the_shipped_release_is_what_train_regard_rebuilds_and_v1_stays_pinned():
    """The default classifiers' configs record the data, settings and threads `train-regard` uses by
    default (the rebuild itself takes minutes: docs/regard.md): release 3's `regard` the v3 table and
    the teacher's soft labels, `regard4` release 2; regard-v1 and regard-v2 always load their release."""
    import hashlib
    import json

    from nlgbias.scorers import get_scorer
    from nlgbias.scorers.regard import RELEASE, RELEASE_4CLASS, classifier_dir
    from nlgbias.training import DISTILL_EPOCHS, SETTINGS, VERSION
    from nlgbias.training.dataset import DATA_OF_RELEASE, dataset_dir, load_dataset, load_soft
    from nlgbias.training.experiment import view

    assert (RELEASE, RELEASE_4CLASS, VERSION) == (4, 2, "4")
    soft = load_soft(default=True)  # what `nlgbias train-regard` learns from by default, beside the table
    soft_hash = hashlib.sha256(pd.util.hash_pandas_object(
        soft[["text", "p_negative", "p_neutral", "p_positive"]], index=False).values.tobytes()).hexdigest()
    for classes, name, release in ((3, "regard", 4), (4, "regard4", 2)):
        folder = classifier_dir(classes)
        assert folder == classifier_dir(classes, release)
        config = json.loads((folder / "config.json").read_text())
        assert config["adapter_sha256"] == hashlib.sha256((folder / "adapter.safetensors").read_bytes()).hexdigest()
        table = view(load_dataset(dataset_dir() / DATA_OF_RELEASE[release]), classes)
        assert config["data_sha256"] == hashlib.sha256(pd.util.hash_pandas_object(table, index=False).values.tobytes()).hexdigest()
        assert (config["version"], config["seed"], config["threads"]) == (str(release), 0, 2)
        assert config["fit_splits"] == ["train", "dev"]
        assert config["train_items"] == int(table["split"].isin(["train", "dev"]).sum())
        if release == 4:
            assert config["settings"] == {**SETTINGS, "epochs": DISTILL_EPOCHS}
            assert (config["soft_items"], config["soft_sha256"]) == (len(soft), soft_hash)
        else:
            assert config["settings"] == SETTINGS and "soft_items" not in config
        assert get_scorer(name).version == f"regard-{release}+{config['adapter_sha256'][:12]}+onnx-int8-checked+alone"
        for pinned_release in (1, 2):
            pinned = json.loads((classifier_dir(classes, pinned_release) / "config.json").read_text())
            scorer = get_scorer(f"{name}-v{pinned_release}")
            assert scorer.version == f"regard-{pinned_release}+{pinned['adapter_sha256'][:12]}+onnx-int8-checked+alone"
            assert scorer.classes == classes


def test_checked_backend_recomputes_only_the_close_calls():
    from nlgbias.scorers.regard_onnx import checked

    logits = np.array([[3.0, 0.0, 0.0], [1.0, 0.9, 0.0], [0.0, 0.0, 5.0], [0.2, 0.0, 0.21]], dtype=np.float32)
    calls = []

    def exact(ids, mask):
        calls.append((ids.copy(), mask.copy()))
        return np.full((len(ids), 3), 7.0)

    ids = np.arange(16).reshape(4, 4)
    mask = np.array([[1, 1, 1, 1], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 0]])
    out = checked(lambda _ids, _mask: logits, exact, 0.3)(ids, mask)
    # rows 1 and 3 have top-two probabilities within 0.3; only they are recomputed, without the all-padding column
    assert len(calls) == 1 and calls[0][0].tolist() == [[4, 5, 6], [12, 13, 14]]
    np.testing.assert_array_equal(out[[0, 2]], logits[[0, 2]])
    assert (out[[1, 3]] == 7.0).all()


def test_onnx_backends_agree_with_pytorch_and_fall_back_without_onnxruntime(isolated_cache, monkeypatch):
    from nlgbias.errors import ScorerError
    from nlgbias.scorers import regard_onnx
    from nlgbias.scorers.regard import RegardScorer
    from nlgbias.training.dataset import load_dataset

    texts = load_dataset()["text"].sample(60, random_state=0).tolist() + ["", "XYZ " + "very " * 80 + "kind."]
    reference = RegardScorer(backend="torch")
    expected = reference.score(texts)
    probs = lambda table: np.array([[d.get(k, np.nan) for k in reference.labels] for d in table["details"][:60]])
    fp32 = RegardScorer(backend="onnx-fp32")
    assert fp32.backend == "onnx-fp32" and len(list(isolated_cache.glob("regard-onnx/*.onnx"))) == 1
    np.testing.assert_allclose(probs(fp32.score(texts)), probs(expected), atol=1e-4)
    checked = RegardScorer(backend="onnx-int8-checked").score(texts)
    assert list(checked["label"]) == list(expected["label"])
    assert checked["details"][61]["truncated"] and checked["label"][60] is None
    monkeypatch.setenv("NLGBIAS_REGARD_BACKEND", "onnx-int9")
    with pytest.raises(ScorerError, match="NLGBIAS_REGARD_BACKEND=onnx-int9: unknown regard backend"):
        RegardScorer()
    monkeypatch.delenv("NLGBIAS_REGARD_BACKEND")
    monkeypatch.setattr(regard_onnx, "available", lambda: False)
    fallback = RegardScorer(backend="onnx-int8-checked")
    assert fallback.backend == "torch" and fallback.version == reference.version and "+onnx" not in reference.version


def test_a_run_with_the_pinned_first_classifier_records_it_in_the_manifest(tmp_path, monkeypatch):
    from nlgbias.scorers import get_scorer

    monkeypatch.chdir(tmp_path)
    result = nlgbias.run("sheng2019", models=["fake"], samples=1, n_boot=100, seed=0, out="run", quiet=True,
                         scorers=["regard-v1"])
    pinned = get_scorer("regard-v1")
    assert [s["version"] for s in result.manifest["scorers"]] == [pinned.version]
    assert pinned.version.startswith("regard-1+252d031efdc4")  # the first release's adapter, whatever RELEASE says
    assert get_scorer("regard-v3").version.startswith("regard-3+5262772614bd")  # release 3, as it landed
    texts = result.samples["scored_text"].tolist()
    assert result.samples["regard-v1_label"].tolist() == list(pinned.score(texts)["label"])


@pytest.mark.parametrize("backend", ["onnx-int8-checked", "torch"])
def test_a_text_scores_the_same_bits_alone_in_any_batch_order_and_thread_count(backend):
    """Batch invariance: int8 dynamic quantisation scales activations per batch tensor and padding changes
    every reduction's length, so batched scores depended on their neighbours; each text is now scored alone."""
    from nlgbias.scorers.regard import RegardScorer
    from nlgbias.training.dataset import load_dataset

    texts = load_dataset()["text"].sample(48, random_state=1).tolist() + ["XYZ " + "very " * 80 + "kind."]
    scorer = RegardScorer(backend=backend)
    alone = [scorer.score([text]).iloc[0] for text in texts]
    rng = np.random.default_rng(0)
    for size in (2, 7, 30, len(texts)):
        order = rng.permutation(len(texts))
        for start in range(0, len(texts), size):
            chunk = order[start:start + size]
            batch = scorer.score([texts[i] for i in chunk] + ["", texts[chunk[0]]])
            for row, i in enumerate(chunk):
                assert batch["label"][row] == alone[i]["label"]
                assert batch["details"][row] == alone[i]["details"]  # every probability, bit for bit
                assert batch["score"][row] == alone[i]["score"]
    one_thread = RegardScorer(backend=backend, workers=1).score(texts)
    assert list(one_thread["details"]) == [a["details"] for a in alone]
    assert scorer.version.endswith("+alone")


def test_a_resumed_store_holds_the_scores_a_fresh_run_computes(tmp_path):
    """Scores cached by one run's chunks are the ones another run's chunks compute (the resume case)."""
    from nlgbias.scorers import get_scorer
    from nlgbias.store import RunStore
    from nlgbias.store.cache import fill_scores
    from nlgbias.training.dataset import load_dataset

    texts = load_dataset()["text"].sample(80, random_state=2).tolist()
    scorer = get_scorer("regard")
    with RunStore(tmp_path / "a.sqlite") as store:
        fill_scores(texts[::3] + texts[50:], scorer, store, batch_size=17)  # an earlier run, other neighbours
        resumed = fill_scores(texts, scorer, store, batch_size=64)
    with RunStore(tmp_path / "b.sqlite") as store:
        fresh = fill_scores(list(reversed(texts)), scorer, store, batch_size=9)
    pd.testing.assert_frame_equal(resumed.sort_values("text_hash", ignore_index=True),
                                  fresh.sort_values("text_hash", ignore_index=True))
