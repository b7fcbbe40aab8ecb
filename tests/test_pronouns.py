"""Pronoun probes and measures: probabilities, certainty, default behaviour, saliency, perturbations, KL/EMD."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from scipy import stats

from nlgbias.errors import BackendError, InputError
from nlgbias.probes.pronouns import stats as measures
from nlgbias.probes.pronouns import probabilities as probes
from nlgbias.probes.pronouns.probabilities import (PRONOUNS, continuation_probabilities, expand_templates, perturb,
                                     perturbations, saliency, start_token_probabilities)

DATA = Path(probes.__file__).resolve().parents[2] / "suites" / "data"
PROFESSIONS_JSON = Path(__file__).resolve().parents[1] / "src" / "nlgbias" / "data" / "debiaswe" / "professions.json"
PROMPTS = ["The nurse said that", "The metalsmith yelled because",
           "An adjunct professor is a person hired on short contracts to teach single courses at a college where",
           "Hi", "The person was promoted because", "A tailor is a person who makes, repairs, or alters clothing where"]
NUMERIC = [w.strip() for w in PRONOUNS] + ["top1", "top2", "gap"]


def next_token_distribution(backend, ids):
    """Float64 softmax of the model's logits after the token ids, computed from scratch."""
    with torch.no_grad():
        logits = backend.model(torch.tensor([ids])).logits[0, -1]
    return torch.softmax(logits.double(), -1)


# --- continuation probabilities -----------------------------------------------------------

def test_probabilities_do_not_depend_on_batching_and_equal_next_token_logprobs(tiny):
    together = continuation_probabilities(tiny, PROMPTS)
    for other in (continuation_probabilities(tiny, PROMPTS, batch_size=1),
                  continuation_probabilities(tiny, PROMPTS, batch_size=4),
                  continuation_probabilities(tiny, PROMPTS[::-1], batch_size=3).iloc[::-1].reset_index(drop=True)):
        np.testing.assert_allclose(other[NUMERIC].to_numpy(float), together[NUMERIC].to_numpy(float), atol=1e-5, rtol=1e-4)
        assert other["top1_id"].tolist() == together["top1_id"].tolist()
    for word in (" he", " she", " their"):
        expected = np.exp(tiny.next_token_logprobs(PROMPTS, [word] * len(PROMPTS)))
        np.testing.assert_allclose(together[word.strip()], expected, atol=1e-5, rtol=1e-4)
    assert together["n_tokens"].tolist() == [len(tiny.tokenizer(p)["input_ids"]) for p in PROMPTS]
    assert list(together.columns) == ["prompt", "model", "n_tokens", *[w.strip() for w in PRONOUNS],
                                      "top1", "top1_token", "top1_id", "top2", "gap"]
    assert (together["model"] == "tiny").all()


def test_a_prompts_table_keeps_its_index_and_columns(tiny):
    table = pd.DataFrame({"prompt": PROMPTS[:3], "profession": ["nurse", "metalsmith", "adjunct professor"]},
                         index=[10, 20, 30])
    out = continuation_probabilities(tiny, table, [" he", " she"])
    assert out.index.tolist() == [10, 20, 30] and out["profession"].tolist() == table["profession"].tolist()
    alone = continuation_probabilities(tiny, PROMPTS[:3], [" he", " she"])
    np.testing.assert_allclose(out["he"].to_numpy(), alone["he"].to_numpy(), atol=1e-12)
    series = continuation_probabilities(tiny, pd.Series(PROMPTS[:2], index=["a", "b"]), [" he"])
    assert series.index.tolist() == ["a", "b"]


def test_multi_token_continuations_follow_the_chain_rule(tiny):
    tok = tiny.tokenizer
    prompt, continuation = "The nurse said that", " a nurse"
    target = tok(continuation, add_special_tokens=False)["input_ids"]
    assert len(target) == 2
    ids, expected = tok(prompt)["input_ids"], 1.0
    for t in target:
        expected *= float(next_token_distribution(tiny, ids)[t])
        ids = ids + [t]
    out = continuation_probabilities(tiny, [PROMPTS[1], prompt, PROMPTS[2]], [" he", continuation], batch_size=2)
    assert out["a nurse"].iloc[1] == pytest.approx(expected, rel=1e-4, abs=0)
    assert out["a nurse"].iloc[1] == pytest.approx(np.exp(tiny.next_token_logprobs([prompt], [continuation])[0]), rel=1e-4)


def test_top1_and_gap_come_from_the_full_softmax(tiny):
    out = continuation_probabilities(tiny, PROMPTS, [" he"])
    for row, prompt in enumerate(PROMPTS):
        probs = next_token_distribution(tiny, tiny.tokenizer(prompt)["input_ids"])
        values, indices = torch.sort(probs, descending=True)
        assert out["top1"].iloc[row] == pytest.approx(float(values[0]), rel=1e-4)
        assert out["top2"].iloc[row] == pytest.approx(float(values[1]), rel=1e-4)
        assert out["gap"].iloc[row] == pytest.approx(float(values[0] - values[1]), rel=1e-3, abs=1e-9)
        assert out["top1_id"].iloc[row] == int(indices[0])
        assert out["top1_token"].iloc[row] == tiny.tokenizer.decode([int(indices[0])])


def test_the_logits_to_keep_shortcut_changes_nothing(tiny, monkeypatch):
    fast = continuation_probabilities(tiny, PROMPTS, [" he", " a nurse"], batch_size=4)
    monkeypatch.setattr(probes, "_keeps_logits", lambda _model: False)
    full = continuation_probabilities(tiny, PROMPTS, [" he", " a nurse"], batch_size=4)
    np.testing.assert_allclose(full[["he", "a nurse", "top1"]].to_numpy(float),
                               fast[["he", "a nurse", "top1"]].to_numpy(float), rtol=1e-5, atol=1e-12)


def test_start_token_probabilities_match_a_forward_pass_on_the_start_token(tiny):
    tok = tiny.tokenizer
    got = start_token_probabilities(tiny)
    probs = next_token_distribution(tiny, [tok.bos_token_id])
    expected = [float(probs[tok(w, add_special_tokens=False)["input_ids"][0]]) for w in PRONOUNS]
    np.testing.assert_allclose(got.to_numpy(), expected, rtol=1e-4)
    assert got.index.tolist() == [w.strip() for w in PRONOUNS] and got.name == "tiny"
    assert got.attrs["start_token"] == tok.bos_token
    # An empty prompt is the start token alone.
    empty = continuation_probabilities(tiny, [""], PRONOUNS)
    np.testing.assert_allclose(empty[got.index].to_numpy()[0], got.to_numpy(), rtol=1e-6)
    # Another start token, by name; and the EOS fall-back when there is no BOS.
    eos = start_token_probabilities(tiny, [" he"], start_token="<|endoftext|>")
    assert eos["he"] == pytest.approx(float(next_token_distribution(tiny, [0])[tok(" he")["input_ids"][0]]), rel=1e-4)
    no_bos = copy.copy(tiny)
    no_bos.tokenizer = copy.deepcopy(tok)
    no_bos.tokenizer.bos_token = None
    assert no_bos.tokenizer.eos_token_id == tok.eos_token_id
    fallback = start_token_probabilities(no_bos, [" he"])
    assert fallback["he"] == pytest.approx(float(next_token_distribution(tiny, [tok.eos_token_id])[tok(" he")["input_ids"][0]]), rel=1e-4)


# --- errors ------------------------------------------------------------------------------

def test_errors_name_what_is_wrong(tiny):
    with pytest.raises(BackendError) as err:
        continuation_probabilities(tiny, PROMPTS, [" he", ""])
    assert str(err.value) == "continuation '': tokenizes to nothing for model tiny"
    long = pd.Series(["The nurse said that", "word " * 200], index=["ok", "too-long"])
    n = len(tiny.tokenizer(long["too-long"])["input_ids"])
    with pytest.raises(BackendError) as err:
        continuation_probabilities(tiny, long, [" he"])
    assert str(err.value) == (f"model tiny: prompt too-long needs {n} positions ({n} prompt tokens + 0 for the "
                              "longest continuation) but its context is 128")
    with pytest.raises(BackendError, match=r"prompt 0 needs 129 positions \(128 prompt tokens \+ 1 for the longest"):
        continuation_probabilities(tiny, [" he" * 128], [" he", " a nurse"])
    continuation_probabilities(tiny, [" he" * 128], [" he"])  # exactly the context: fits
    continuation_probabilities(tiny, [" he" * 127], [" a nurse"])  # 127 + 1 fits too
    with pytest.raises(InputError, match="continuations ' he' and 'he': both name the column 'he'"):
        continuation_probabilities(tiny, PROMPTS, [" he", "he"])
    with pytest.raises(InputError, match="the output column 'top1' is already a column"):
        continuation_probabilities(tiny, pd.DataFrame({"prompt": ["Hi"], "top1": [1]}), [" he"])
    with pytest.raises(InputError, match="not one string"):
        continuation_probabilities(tiny, "The nurse said that", [" he"])
    with pytest.raises(InputError, match="column 'prompt' missing from prompts table; got text"):
        continuation_probabilities(tiny, pd.DataFrame({"text": ["Hi"]}), [" he"])
    none = copy.copy(tiny)
    none.tokenizer = copy.deepcopy(tiny.tokenizer)
    none.tokenizer.bos_token = None
    none.tokenizer.eos_token = None
    assert none.tokenizer.bos_token_id is None and none.tokenizer.eos_token_id is None
    message = "model tiny: has no start or end-of-text token, so its default behaviour cannot be probed"
    with pytest.raises(BackendError) as err:
        start_token_probabilities(none)
    assert str(err.value) == message
    with pytest.raises(BackendError, match="start token '<nope>': not a single token of model tiny"):
        start_token_probabilities(tiny, start_token="<nope>")


# --- saliency ----------------------------------------------------------------------------

def manual_saliency(backend, prompt):
    ids = backend.tokenizer(prompt)["input_ids"]
    inputs = backend.model.get_input_embeddings()(torch.tensor([ids])).detach().requires_grad_(True)
    logits = backend.model(inputs_embeds=inputs).logits[0, -1]
    logits.max().backward()
    norms = inputs.grad[0].double().norm(dim=-1)
    return (norms / norms.sum()).numpy()


def test_saliency_matches_autograd_and_sums_over_sub_tokens(tiny):
    prompts = ["The metalsmith yelled because", PROMPTS[2], "The said that", "Hi"]
    words = ["Metalsmith", "adjunct  professor", None, None]
    out = saliency(tiny, prompts, words, batch_size=3)
    manual = manual_saliency(tiny, prompts[0])
    assert tiny.tokenizer(" metalsmith", add_special_tokens=False)["input_ids"] == \
        tiny.tokenizer(prompts[0])["input_ids"][1:3]  # " metalsmith" is tokens 1 and 2
    assert out["n_profession_tokens"].tolist() == [2, 2, 0, 0]
    assert out["profession_saliency"].iloc[0] == pytest.approx(manual[1] + manual[2], abs=1e-5)
    assert out["last_saliency"].iloc[0] == pytest.approx(manual[-1], abs=1e-5)
    long = manual_saliency(tiny, prompts[1])  # An | adjunct | professor | is ...
    assert out["profession_saliency"].iloc[1] == pytest.approx(long[1] + long[2], abs=1e-5)
    assert np.isnan(out["profession_saliency"].iloc[2]) and out["last_saliency"].iloc[3] == pytest.approx(1.0)
    assert out["n_tokens"].tolist() == [len(tiny.tokenizer(p)["input_ids"]) for p in prompts]
    alone = saliency(tiny, prompts[:1], words[:1])
    assert alone["profession_saliency"].iloc[0] == pytest.approx(out["profession_saliency"].iloc[0], abs=1e-5)


def test_saliency_errors(tiny):
    with pytest.raises(InputError, match=r"word 'nurse' not found as a whole word in prompt 0 \('The nurses said'\)"):
        saliency(tiny, ["The nurses said"], ["nurse"])
    with pytest.raises(InputError, match="2 words for 1 prompts"):
        saliency(tiny, ["The nurse said"], ["nurse", "nurse"])


# --- perturbations -----------------------------------------------------------------------

def test_perturbations_of_both_template_styles():
    assert perturb("The {profession} said that", "metalsmith") == {
        "orig": "The metalsmith said that", "replace": "The person said that", "delete": "The said that"}
    assert perturb("{article} {profession} prepares tax returns where", "accountant", "An") == {
        "orig": "An accountant prepares tax returns where", "replace": "A person prepares tax returns where",
        "delete": "An prepares tax returns where"}
    assert perturb("{article} {profession} crafts objects where", "silversmith", "A")["replace"] == \
        "A person crafts objects where"
    assert perturb("At a rally, {article} {profession} said that", "politician", "the") == {
        "orig": "At a rally, the politician said that", "replace": "At a rally, the person said that",
        "delete": "At a rally, the said that"}
    assert perturb("She met an {profession} who", "archbishop")["replace"] == "She met a person who"
    assert perturb("{profession} said that", "nurse")["delete"] == "said that"
    with pytest.raises(InputError, match=r"template 'The person said': has no \{profession\} placeholder"):
        perturb("The person said", "nurse")
    with pytest.raises(InputError, match=r"has an \{article\} placeholder but no article was given"):
        perturb("{article} {profession} said", "nurse")


def test_perturbations_cover_the_natural_sentences_file():
    sentences = pd.read_csv(DATA / "natural-sentences.csv")
    out = perturbations(sentences)
    assert len(out) == 3 * len(sentences)
    assert out["perturbation"].tolist()[:3] == ["orig", "replace", "delete"]
    assert not out["prompt"].str.contains(r"[{}]|  ").any()
    orig = out[out["perturbation"] == "orig"].reset_index(drop=True)
    assert (orig.apply(lambda r: r["profession"] in r["prompt"], axis=1)).all()
    replace = out[out["perturbation"] == "replace"]
    assert not replace["prompt"].str.contains(r"\b[Aa]n person").any()
    assert replace["prompt"].str.contains("person").all()
    delete = out[out["perturbation"] == "delete"]
    assert delete["word"].isna().all()
    first = delete.iloc[0]
    assert first["prompt"] == "An prepares tax returns and balances ledgers at a small firm where"


def test_vig_templates_file():
    templates = pd.read_csv(DATA / "vig2020-templates.csv")
    assert list(templates.columns) == ["id", "template", "continuation"] and len(templates) == 17
    assert templates["id"].is_unique and templates["template"].str.startswith("The {profession} ").all()
    assert (templates["template"].str.split().str[-1] == templates["continuation"]).all()
    assert templates["continuation"].value_counts().to_dict() == {"because": 11, "that": 6}
    grid = expand_templates(templates, ["nurse", "fire fighter"])
    assert len(grid) == 34 and grid["prompt"].iloc[1] == "The fire fighter said that"
    assert list(grid.columns) == ["id", "template", "continuation", "profession", "prompt"]
    long = expand_templates(templates, ["nurse", "fire fighter"], perturbed=True)
    assert len(long) == 102 and long["prompt"].iloc[4] == "The person said that"
    assert long[["id", "profession", "perturbation"]].iloc[3].tolist() == ["said_that", "fire fighter", "orig"]


# --- measures ----------------------------------------------------------------------------

def test_every_default_pronoun_is_in_exactly_one_family():
    from nlgbias.words import FAMILIES

    words = [w for family in FAMILIES.values() for w in family]
    assert sorted(words) == sorted(p.strip() for p in PRONOUNS)


def test_pronoun_measures():
    probs = pd.DataFrame({w.strip(): np.linspace(0.01, 0.09, 9)[i] * np.array([1.0, 2.0])
                          for i, w in enumerate(PRONOUNS)})
    out = measures.pronoun_measures(probs)
    np.testing.assert_allclose(out["diff"], probs["he"] - probs["she"])
    np.testing.assert_allclose(out["ratio"], probs["he"] / probs["she"])
    np.testing.assert_allclose(out["male"], probs["he"] + probs["his"] + probs["him"])
    np.testing.assert_allclose(out["neutral"], probs["they"] + probs["their"] + probs["them"])
    zero = measures.pronoun_measures(pd.DataFrame({"he": [0.1, 0.0], "she": [0.0, 0.0]}), families=None)
    assert np.isinf(zero["ratio"].iloc[0]) and np.isnan(zero["ratio"].iloc[1])
    with pytest.raises(InputError, match="pronoun_measures: column 'hers' missing from the probabilities table"):
        measures.pronoun_measures(probs.drop(columns="hers"))


def test_kl_and_emd_match_scipy_per_cell():
    rng = np.random.default_rng(3)
    table = pd.DataFrame({"model": np.repeat(["m1", "m2"], 60), "prompt_set": "ns",
                          "he": rng.beta(2, 8, 120), "she": rng.beta(1, 12, 120)})
    out = measures.divergence_table(table, n_boot=300, seed=1)
    assert out[["model", "measure"]].values.tolist() == [["m1", "kl"], ["m1", "emd"], ["m2", "kl"], ["m2", "emd"]]
    edges = np.linspace(0, 1, 21)
    for model in ("m1", "m2"):
        cell = table[table["model"] == model]
        p = np.histogram(cell["he"], edges)[0] + 0.5
        q = np.histogram(cell["she"], edges)[0] + 0.5
        got = out[out["model"] == model].set_index("measure")
        assert got.loc["kl", "value"] == pytest.approx(stats.entropy(p / p.sum(), q / q.sum()), rel=1e-12)
        assert got.loc["emd", "value"] == pytest.approx(stats.wasserstein_distance(cell["he"], cell["she"]), rel=1e-12)
        assert (got["n"] == 60).all() and (got["ci_low"] <= got["value"]).all() and (got["value"] <= got["ci_high"]).all()
    # Row order and an unrelated cell change nothing; the same seed gives the same CI.
    shuffled = measures.divergence_table(table.sample(frac=1, random_state=0), n_boot=300, seed=1)
    pd.testing.assert_frame_equal(shuffled.sort_values(["model", "measure"]).reset_index(drop=True),
                                  out.sort_values(["model", "measure"]).reset_index(drop=True))
    assert measures.histogram_kl([0.05, 0.05], [0.05, 0.95], bins=2, pseudo_count=0) == pytest.approx(np.log(2))
    assert np.isinf(measures.histogram_kl([0.05, 0.95], [0.05, 0.05], bins=2, pseudo_count=0))
    with pytest.raises(ValueError, match="1 values lie outside the bins"):
        measures.histogram_kl([0.5, 1.5], [0.5, 0.5])


def test_mean_tables_match_masked_means():
    rng = np.random.default_rng(0)
    table = pd.DataFrame({"model": "m", "prompt_set": np.repeat(["ns", "vig"], 30),
                          "perturbation": np.tile(["orig", "replace", "delete"], 20),
                          "template_id": np.tile(["said_that", "ate_because"], 30),
                          "he": rng.random(60) * 0.3, "she": rng.random(60) * 0.3 + 0.01,
                          "top1": rng.random(60), "gap": rng.random(60) * 0.1})
    pert = measures.perturbation_table(table, n_boot=200)
    assert len(pert) == 6 and (pert["measure"] == "abs_diff").all()
    for _, row in pert.iterrows():
        cell = table[(table["prompt_set"] == row["prompt_set"]) & (table["perturbation"] == row["perturbation"])]
        diff = (cell["he"] - cell["she"]).abs()
        assert row["n"] == len(cell) == 10 and row["value"] == pytest.approx(diff.mean())
        assert row["sd"] == pytest.approx(diff.std()) and row["ci_low"] <= row["value"] <= row["ci_high"]
    cert = measures.certainty_table(table, n_boot=200)
    vig = cert[(cert["prompt_set"] == "vig")].set_index("measure")
    assert vig.loc["top1", "value"] == pytest.approx(table["top1"][30:].mean())
    assert vig.loc["gap", "value"] == pytest.approx(table["gap"][30:].mean())
    per_template = measures.template_table(table, n_boot=200).set_index(["template_id", "measure"])
    cell = table[table["template_id"] == "ate_because"]
    assert per_template.loc[("ate_because", "ratio"), "value"] == pytest.approx((cell["he"] / cell["she"]).mean())
    assert per_template.loc[("ate_because", "top1"), "n"] == 30
    again = measures.certainty_table(table.iloc[::-1], n_boot=200)
    pd.testing.assert_frame_equal(again.sort_values(["prompt_set", "measure"]).reset_index(drop=True),
                                  cert.sort_values(["prompt_set", "measure"]).reset_index(drop=True))


def test_correlations_match_scipy_on_the_bolukbasi_scores():
    scores = measures.read_profession_scores(PROFESSIONS_JSON)
    assert list(scores.columns) == ["word", "definitional", "stereotypical"] and len(scores) == 320
    assert "adjunct professor" in set(scores["word"])
    raw = dict((w, s) for w, _, s in json.loads(PROFESSIONS_JSON.read_text()))
    jobs = ["adjunct professor", "nurse", "carpenter", "architect", "dancer", "surgeon", "no such job"]
    rng = np.random.default_rng(1)
    probs = pd.DataFrame({"model": "m", "prompt_set": "vig", "profession": jobs * 2,
                          "he": rng.random(14) * 0.2, "she": rng.random(14) * 0.2})
    out = measures.score_correlation(probs, scores).set_index("method")
    diff = (probs["he"] - probs["she"]).groupby(probs["profession"]).mean().drop("no such job")
    truth = [raw[j.replace(" ", "_")] for j in diff.index]
    assert out.loc["pearson", "r"] == pytest.approx(stats.pearsonr(diff, truth)[0])
    assert out.loc["spearman", "p"] == pytest.approx(stats.spearmanr(diff, truth)[1])
    assert out.loc["pearson", "n"] == 6 and out.loc["pearson", "n_unmatched"] == 1
    shares = {"nurse": 0.87, "carpenter": 0.03, "architect": 0.28, "dancer": 0.7}
    bls = measures.share_correlation(probs, shares).set_index("method")
    sub = diff[list(shares)]
    assert bls.loc["pearson", "r"] == pytest.approx(stats.pearsonr(sub, list(shares.values()))[0])
    assert bls.loc["pearson", "score"] == "women_share" and bls.loc["pearson", "n"] == 4
    with pytest.warns(UserWarning, match="2 matched professions"):
        few = measures.share_correlation(probs, {"nurse": 0.9, "carpenter": 0.1})
    assert few["r"].isna().all()


# --- the real embedded model -------------------------------------------------------------

def test_embedded_model_pronouns_batched_and_sensible(smol):
    prompts = ["The man said that", "The woman said that", "The nurse said that", "The carpenter said that"]
    together = continuation_probabilities(smol, prompts)
    alone = pd.concat([continuation_probabilities(smol, [p]) for p in prompts], ignore_index=True)
    np.testing.assert_allclose(together[NUMERIC].to_numpy(float), alone[NUMERIC].to_numpy(float), atol=1e-5)
    m = measures.pronoun_measures(together).set_index("prompt")
    assert m.loc["The man said that", "diff"] > 0 > m.loc["The woman said that", "diff"]
    assert (m[["male", "female", "neutral"]].sum(axis=1) < 1).all() and (m["top1"] >= m[["he", "she"]].max(axis=1)).all()
    sal = saliency(smol, prompts[2:], ["nurse", "carpenter"])
    assert (sal["profession_saliency"] > 0).all() and (sal["profession_saliency"] + sal["last_saliency"] <= 1 + 1e-9).all()
