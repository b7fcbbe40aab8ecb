"""End to end on the real embedded model, and through an OpenAI-compatible server."""

from __future__ import annotations

import json

import pandas as pd

import nlgbias
from fakeserver import FakeServer


def test_sheng2019_on_the_embedded_model(tmp_path):
    result = nlgbias.run("sheng2019", models=["smollm2-135m"], samples=2, seed=0, out=tmp_path, quiet=True, n_boot=500)
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("store.sqlite")) == sorted(result.manifest["outputs"])
    samples = pd.read_parquet(tmp_path / "samples.parquet")
    assert len(samples) == 120 and samples["generation_id"].is_unique
    for column in ("run_id", "model", "suite", "prompt_id", "template", "context", "group", "axis", "gender", "race",
                   "sexuality", "sample_idx", "seed", "continuation", "is_empty", "sentence", "scored_text",
                   "vader_label", "vader_score", "textblob_label", "textblob_score", "regard_label", "regard_score"):
        assert column in samples.columns, column
    assert set(samples["regard_label"].dropna()) <= {"negative", "neutral", "positive"}
    assert samples["regard_label"].notna().sum() >= 110  # only empty continuations go unlabelled
    assert (samples["sentence"].str.len() <= (samples["prompt"] + samples["continuation"]).str.len()).all()
    assert all(s.startswith(p) for s, p in zip(samples["sentence"], samples["prompt"]))
    assert not samples["scored_text"].str.contains("The gay person", regex=False).any()
    jsonl = [json.loads(line) for line in (tmp_path / "samples.jsonl").read_text().splitlines()]
    assert len(jsonl) == 120 and jsonl[0]["generation_id"] == samples["generation_id"].iloc[0]

    manifest = json.loads((tmp_path / "manifest.json").read_text())
    model = manifest["models"][0]
    assert model["weights_sha256"] == model["fingerprint"] and len(model["weights_sha256"]) == 64
    assert manifest["sampling"]["top_k"] == 40 and manifest["sampling"]["temperature"] == 0.7
    assert manifest["sampling"]["max_new_tokens"] == 40 and manifest["suite"]["content_hash"]
    assert manifest["libraries"]["torch"].startswith("2.") and not manifest.get("scorers_unavailable")

    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert len(metrics["shares"]) == 2 * 3 * 6 * 3      # contexts x scorers x groups x labels
    assert len(metrics["gaps"]) == 2 * 3 * 3 * 2        # contexts x scorers x pairs x labels
    assert all(row["small_n"] for row in metrics["gaps"])  # 10 samples per cell: flagged
    page = (tmp_path / "report.html").read_text()
    assert page.count("<svg") == 6 and "<script" not in page

    again = nlgbias.run("sheng2019", models=["smollm2-135m"], samples=2, seed=0, out=tmp_path, quiet=True, n_boot=500)
    assert again.generated == 0 and again.rebuilt == []
    pd.testing.assert_frame_equal(again.samples.reset_index(drop=True), result.samples.reset_index(drop=True))


def test_two_models_side_by_side_through_a_server_never_write_the_key(tmp_path, monkeypatch):
    secret = "sk-never-write-me-0123456789"
    monkeypatch.setenv("NLGBIAS_KEY_FOR_TEST", secret)
    with FakeServer() as server:
        from nlgbias.models import BackendOptions

        result = nlgbias.run("sheng2019", models=["fake", f"openai:served@{server.url}"], samples=3, out=tmp_path,
                             quiet=True, n_boot=200, backend_options=BackendOptions(api_key_env="NLGBIAS_KEY_FOR_TEST"),
                             command=["nlgbias", "run"])
    assert all(h["Authorization"] == f"Bearer {secret}" for h in server.headers)
    assert len(server.requests) == 180
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path
    # One display name per model in every table; the full --model value in the manifest and models.csv.
    assert set(result.samples["model"]) == {"fake", "served"}
    assert set(result.results.model_gaps["model_a"]) | set(result.results.model_gaps["model_b"]) == {"fake", "served"}
    for name in ("shares.csv", "gaps.csv", "model_gaps.csv"):
        assert "openai:" not in (tmp_path / name).read_text()
    assert [(m["name"], m["model"]) for m in result.manifest["models"]] == \
        [("fake", "fake"), ("served", f"openai:served@{server.url}")]
    models = pd.read_csv(tmp_path / "models.csv")
    assert models[["name", "model"]].values.tolist() == [["fake", "fake"], ["served", f"openai:served@{server.url}"]]
    assert len(result.results.model_gaps) == 2 * 3 * 6 * 2  # contexts x scorers x groups x labels
    page = (tmp_path / "report.html").read_text()
    assert "Model gaps" in page


def test_occupation_suite_runs_every_kirk_analysis(tmp_path):
    result = nlgbias.run("kirk2021-identity", models=["fake"], samples=12, out=tmp_path, quiet=True, n_boot=200,
                         scorers=["occupation"])
    tables = result.results.tables
    for name in ("occupation_calls", "occupation_gini", "occupation_rank_frequency", "occupation_coverage",
                 "occupation_gender_split", "occupation_regression_summary", "labor_comparison", "labor_agreement"):
        assert name in tables, name
        assert (tmp_path / f"{name}.csv").is_file()
    calls = tables["occupation_calls"]
    assert calls["n_calls"].sum() == 28 * 12 and set(calls["gender"]) == {"man", "woman"}
    samples = pd.read_parquet(tmp_path / "samples.parquet")
    titled = samples["occupation_details"].map(lambda d: len(json.loads(d)["occupations"]) > 0)
    assert calls["n_titled"].sum() == titled.sum()
    page = (tmp_path / "report.html").read_text()
    assert "<h2>Occupations</h2>" in page and "Kendall" in page and "<script" not in page


def test_occupation_analysis_needs_the_occupation_scorer(tmp_path):
    import pytest

    from nlgbias.errors import InputError

    with pytest.raises(InputError, match="the occupations analysis of suite kirk2021-names needs the occupation scorer"):
        nlgbias.run("kirk2021-names", models=["fake"], samples=1, out=tmp_path, quiet=True, scorers=["vader"])


def test_pronoun_suite_on_a_local_model_resumes_from_the_store(tmp_path, tiny_model_dir):
    first = nlgbias.run("natural-sentences", models=[str(tiny_model_dir)], out=tmp_path, quiet=True, n_boot=200)
    samples = pd.read_parquet(tmp_path / "samples.parquet")
    assert len(samples) == 3 * 359 and {"he", "she", "top1", "gap", "perturbation", "profession"} <= set(samples.columns)
    assert ((samples["he"] > 0) & (samples["he"] < 1)).all()
    for name in ("pronoun_divergence", "pronoun_perturbation", "pronoun_certainty", "pronoun_saliency",
                 "pronoun_default", "pronoun_validity"):
        assert name in first.results.tables, name
    again = nlgbias.run("natural-sentences", models=[str(tiny_model_dir)], out=tmp_path, quiet=True, n_boot=200)
    assert again.rebuilt == [] and again.run_id == first.run_id
    assert "<h2>Pronoun probabilities after occupation prompts</h2>" in (tmp_path / "report.html").read_text()


def test_gender_direction_suite_runs_the_fairness_check(tmp_path):
    result = nlgbias.run("yeo2020-professions", models=["fake"], samples=10, out=tmp_path, quiet=True, n_boot=200)
    tables = result.results.tables
    pairs = tables["fairness_pairs"]
    assert set(pairs["distance"]) == {"jaccard", "cosine"} and len(pairs) == 2 * 2 * 2  # templates x pairs x distances
    assert set(pairs["u"]) == {"She works as", "The woman works as", "She has a job as", "The woman has a job as"}
    lipschitz = tables["fairness_lipschitz"].set_index("distance")["L"]
    jaccard = pairs[pairs["distance"] == "jaccard"]
    assert lipschitz["jaccard"] == (jaccard["gap"] / jaccard["d"]).max()
    sanity = tables["gender_direction_sanity"]
    assert (sanity["pearson_r"] > 0.3).all()  # the direction tracks Bolukbasi's gender scores
    assert "Individual fairness" in (tmp_path / "report.html").read_text()
