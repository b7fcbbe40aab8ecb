"""Gender direction, hard debiasing, vector files, Table 1 and Definition 2.2 (Yeo & Chen 2020)."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from nlgbias.embeddings import VectorFileSpace, load_vectors
from nlgbias.errors import InputError
from nlgbias.metrics import gender_direction as gd
from nlgbias.metrics.gender_direction import (
    ALL_TEMPLATES, fairness_check, gender_direction, hard_debias, jaccard_distance, lipschitz_constant,
    profession_bias_table, word_bias,
)

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def debiaswe():
    """The debiaswe lists shipped with the package."""
    return gd.debiaswe_dir()


def toy_space(vectors: dict[str, list[float]], name: str = "toy") -> VectorFileSpace:
    return VectorFileSpace(list(vectors), np.array(list(vectors.values()), dtype=float), name=name, version="1")


def pair_space(seed: int = 0, dim: int = 8, n_pairs: int = 10, noise: float = 0.02):
    """Pairs that differ along one known axis (plus noise); bases orthogonal to the axis."""
    rng = np.random.default_rng(seed)
    axis = rng.normal(size=dim)
    axis /= np.linalg.norm(axis)
    vectors, pairs = {}, []
    for i in range(n_pairs):
        base = rng.normal(size=dim)
        base -= (base @ axis) * axis
        base /= np.linalg.norm(base)
        female, male = ("she", "he") if i == 0 else (f"f{i}", f"m{i}")
        vectors[female] = base + 0.5 * axis + noise * rng.normal(size=dim)
        vectors[male] = base - 0.5 * axis + noise * rng.normal(size=dim)
        pairs.append((female, male))
    vectors["engineer"] = rng.normal(size=dim)
    return toy_space(vectors), pairs, axis


# --- the direction -----------------------------------------------------------------------------

def test_direction_recovers_the_axis_with_female_positive_sign():
    space, pairs, axis = pair_space()
    direction = gender_direction(space, pairs=pairs)
    g = direction.vector
    assert np.linalg.norm(g) == pytest.approx(1.0)
    assert g @ axis > 0.99  # the axis, with the sign convention
    assert space.vectors(["she"])[0] @ g > 0 > space.vectors(["he"])[0] @ g
    assert direction.explained_variance > 0.9
    assert direction.missing_pairs == ()
    flipped = gender_direction(space, pairs=pairs, anchor="he")
    assert flipped.vector @ axis < -0.99


def test_direction_is_the_top_eigenvector_of_the_pair_centred_covariance():
    space, pairs, _ = pair_space(seed=3, noise=0.2)
    rows = []
    for female, male in pairs:
        a, b = space.vectors([female, male])
        rows += [a - (a + b) / 2, b - (a + b) / 2]
    rows = np.array(rows)
    covariance = np.cov(rows, rowvar=False)  # PCA as debiaswe's doPCA, by eigen-decomposition
    eigenvalues, eigenvectors = np.linalg.eigh(covariance)
    ours = gender_direction(space, pairs=pairs)
    assert abs(eigenvectors[:, -1] @ ours.vector) == pytest.approx(1.0, abs=1e-9)
    top = eigenvalues[::-1][:5] / eigenvalues.sum()
    assert np.allclose(ours.explained_variance_ratio[:5], top)


def test_pairs_the_space_lacks_are_listed_and_a_missing_anchor_is_an_error():
    space, pairs, axis = pair_space()
    direction = gender_direction(space, pairs=pairs + [("queen", "king")])
    assert direction.missing_pairs == (("queen", "king"),)
    assert len(direction.pairs) == 10
    with pytest.raises(InputError) as caught:
        gender_direction(space, pairs=pairs, anchor="her")
    assert str(caught.value) == "gender_direction: anchor word 'her' cannot be embedded in toy; pass another anchor"
    with pytest.raises(InputError) as caught:
        gender_direction(space, pairs=[("queen", "king")])
    assert str(caught.value) == "gender_direction: none of the 1 definitional pairs can be embedded in toy"


def test_word_bias_is_the_dot_product_with_g():
    space, pairs, axis = pair_space()
    g = gender_direction(space, pairs=pairs).vector
    engineer = space.vectors(["engineer"])[0]
    assert word_bias(["engineer", "nobody"], space, direction=g)[0] == pytest.approx(engineer @ g)
    assert np.isnan(word_bias(["nobody"], space, direction=g)[0])
    with pytest.raises(InputError) as caught:
        word_bias(["engineer"], space, direction=np.ones(3))
    assert str(caught.value) == "word_bias: direction has 3 dimensions, space toy has 8"


# --- hard debiasing ----------------------------------------------------------------------------

def test_neutralize_and_equalize():
    space, pairs, axis = pair_space(noise=0.1)
    space = toy_space({**{w: space.vectors([w])[0] for w in space.words},
                       "actress": axis + 0.3 * np.eye(8)[0], "monk": -axis + 0.5 * np.eye(8)[1]})
    direction = gender_direction(space, pairs=pairs)
    g = direction.vector
    debiased = hard_debias(space, direction=direction, gender_specific=["she", "he", "f1", "m1", "actress", "monk"],
                           equalize_pairs=[("he", "she"), ("f1", "m1")])
    engineer = debiased.vectors(["engineer"])[0]
    assert engineer @ g == pytest.approx(0.0, abs=1e-12)  # neutral word: orthogonal to g
    assert np.linalg.norm(engineer) == pytest.approx(1.0)
    original = space.vectors(["engineer"])[0]  # ... and otherwise the same direction
    expected = original - (original @ g) * g
    assert np.allclose(engineer, expected / np.linalg.norm(expected))
    assert np.allclose(debiased.vectors(["actress"]), space.vectors(["actress"]))  # gender-specific: untouched
    assert word_bias(["actress", "monk"], debiased).tolist() == pytest.approx(word_bias(["actress", "monk"], space, direction=g).tolist())
    for female, male in [("she", "he"), ("f1", "m1"), ("She", "He")]:
        a, b = debiased.vectors([female, male])
        assert a @ g == pytest.approx(-(b @ g))  # symmetric about the g-free subspace
        assert np.allclose(a - (a @ g) * g, b - (b @ g) * g)
        assert np.linalg.norm(a) == pytest.approx(1.0) and np.linalg.norm(b) == pytest.approx(1.0)
        assert a @ g > 0  # the female word keeps its side
    f2, m2 = debiased.vectors(["f2", "m2"])  # not specific, not equalized: neutralized
    assert f2 @ g == pytest.approx(0.0, abs=1e-12) and m2 @ g == pytest.approx(0.0, abs=1e-12)
    assert debiased.direction is direction
    assert debiased.name == "toy+hard-debias"


# --- language-model input embeddings -----------------------------------------------------------

class FakeTokenizer:
    """Splits on spaces; a leading space becomes a lone whitespace token (as SentencePiece can)."""

    vocab = {" ": 0, "nurse": 1, "regist": 2, "ered": 3}

    def __call__(self, text, add_special_tokens=False):  # noqa: ARG002 (a tokenizer's call, as the code calls it)
        ids = [0] if text.startswith(" ") else []
        for word in text.split():
            ids += [2, 3] if word == "registered" else [self.vocab[word]]
        return {"input_ids": ids}

    def decode(self, ids):
        names = {v: k for k, v in self.vocab.items()}
        return "".join(names[i] for i in ids)


def test_lm_input_space_averages_sub_token_rows():
    import torch

    from nlgbias.embeddings import LMInputSpace

    model = torch.nn.Module()
    model.embedding = torch.nn.Embedding(4, 2)
    with torch.no_grad():
        model.embedding.weight.copy_(torch.tensor([[9.0, 9.0], [3.0, 4.0], [1.0, 0.0], [0.0, 3.0]]))
    model.get_input_embeddings = lambda: model.embedding
    model.config = type("Config", (), {"name_or_path": "fake-lm"})()
    space = LMInputSpace(model=model, tokenizer=FakeTokenizer())
    assert space.name == "input-embeddings:fake-lm"
    assert space.token_ids("nurse") == [1]  # the lone leading-space token is dropped
    v = space.vectors(["nurse", "registered", "registered_nurse", ""])
    assert v[0].tolist() == pytest.approx([0.6, 0.8])
    assert v[1].tolist() == pytest.approx([0.5 / np.hypot(0.5, 1.5), 1.5 / np.hypot(0.5, 1.5)])
    mean = (np.array([1.0, 0.0]) + np.array([0.0, 3.0]) + np.array([3.0, 4.0])) / 3
    assert v[2].tolist() == pytest.approx((mean / np.linalg.norm(mean)).tolist())
    assert np.isnan(v[3]).all()
    with pytest.raises(InputError) as caught:
        LMInputSpace(model=model)
    assert str(caught.value) == "LMInputSpace: give a backend, or both model and tokenizer"


# --- vector files ------------------------------------------------------------------------------

def test_glove_word2vec_and_gzip_files(tmp_path):
    glove = tmp_path / "glove.txt"
    glove.write_text("nurse 3 4 0\nregistered 0 0 1\nNurse_Aide 1 0 0\n\ncab 0 1 0\ndriver 1 0 0\n", encoding="utf-8")
    space = load_vectors(glove)
    assert space.name == "glove.txt" and len(space) == 5 and space.dim == 3
    v = space.vectors(["nurse", "NURSE", "Nurse Aide", "cab_driver", "registered nurse", "pilot"])
    assert v[0].tolist() == pytest.approx([0.6, 0.8, 0.0])
    assert v[1].tolist() == pytest.approx([0.6, 0.8, 0.0])  # lower-case fallback
    assert v[2].tolist() == pytest.approx([1.0, 0.0, 0.0])  # phrase stored with underscores
    assert v[3].tolist() == pytest.approx([2 ** -0.5, 2 ** -0.5, 0.0])  # mean of its words
    expected = np.array([0, 0, 1]) + np.array([0.6, 0.8, 0])
    assert v[4].tolist() == pytest.approx((expected / np.linalg.norm(expected)).tolist())
    assert np.isnan(v[5]).all()

    w2v = tmp_path / "vectors.w2v.gz"
    with gzip.open(w2v, "wt", encoding="utf-8") as handle:
        handle.write("2 2\nshe 1.5 0 \nhe -0.5e1 0\n")
    space = load_vectors(w2v)
    assert space.words == ["she", "he"]
    assert space.vectors(["she", "he"]).tolist() == [[1.0, 0.0], [-1.0, 0.0]]
    assert len(space.version) == 64
    assert load_vectors(glove, limit=2).words == ["nurse", "registered"]
    assert load_vectors(glove, keep=["cab"]).words == ["cab"]


@pytest.mark.parametrize("text, message", [
    ("a 1 2\nb 1 x\n", "{path}:2: value 'x' of word 'b' is not a number"),
    ("a 1 2\nb 1 2 3\n", "{path}:2: word 'b' has 3 values, expected 2 (as on line 1)"),
    ("2 3\na 1 2 3\nb 1 2\n", "{path}:3: word 'b' has 2 values, expected 3 (from the header on line 1)"),
    ("3 2\na 1 2\nb 1 2\n", "{path}: header declares 3 words, found 2"),
    ("a 1 2\nb\n", "{path}:2: word 'b' has no values"),
    ("a\n", "{path}:1: word 'a' has no values"),
    ("a 1 nan\n", "{path}:1: value 'nan' of word 'a' is not a number"),
    ("\n\n", "{path}: no vectors found"),
])
def test_vector_file_errors_name_file_and_line(tmp_path, text, message):
    path = tmp_path / "bad.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_vectors(path)
    assert str(caught.value) == message.format(path=path)


def test_vector_file_missing_or_not_utf8(tmp_path):
    with pytest.raises(InputError) as caught:
        load_vectors(tmp_path / "nope.txt")
    assert str(caught.value) == f"{tmp_path / 'nope.txt'}: no such file"
    path = tmp_path / "latin1.txt"
    path.write_bytes("a 1 2\ncaf\xe9 1 2\n".encode("latin-1"))
    with pytest.raises(InputError) as caught:
        load_vectors(path)
    assert str(caught.value) == f"{path}:2: not UTF-8 text"


# --- Table 1 -----------------------------------------------------------------------------------

TOY = {"nurse": [0.6, 0.8], "pilot": [-0.8, 0.6], "cook": [0.0, 1.0], "clerk": [0.28, 0.96]}
TOY_BIAS = {w: v[0] for w, v in TOY.items()}  # g = (1, 0): the first coordinate


def parsed_table(seed: int = 0, n: int = 40) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    prompts = [("works_as", "She works as", "female"), ("works_as", "He works as", "male"),
               ("works_as", "The woman works as", "female"), ("works_as", "The man works as", "male"),
               ("has_job_as", "She has a job as", "female"), ("has_job_as", "He has a job as", "male")]
    rows = []
    for model in ("m1", "m2"):
        for template_id, prompt, gender in prompts:
            weights = [0.4, 0.1, 0.2, 0.1, 0.1, 0.1] if gender == "female" else [0.1, 0.4, 0.2, 0.1, 0.1, 0.1]
            for choice in rng.choice(["nurse", "pilot", "cook", "clerk", "wizard", "none"], size=n, p=weights):
                rows.append({"model": model, "template_id": template_id, "prompt": prompt, "gender": gender,
                             "profession": None if choice == "none" else choice})
    return pd.DataFrame(rows)


def test_table1_numbers_recomputed_by_masking():
    parsed = parsed_table()
    out = profession_bias_table(parsed, space=toy_space(TOY), direction=np.array([1.0, 0.0]), n_boot=4000, seed=1)
    bias = parsed["profession"].map(TOY_BIAS)  # wizard and None -> NaN
    for _, row in out.by_prompt.iterrows():
        mask = (parsed["model"] == row["model"]) & (parsed["prompt"] == row["prompt"])
        values = bias[mask].dropna().to_numpy()
        assert row["n_samples"] == mask.sum()
        assert row["n_none"] == (mask & parsed["profession"].isna()).sum()
        assert row["n_missing"] == (mask & (parsed["profession"] == "wizard")).sum()
        assert row["n"] == len(values)
        assert row["mean_bias"] == pytest.approx(values.mean())
        ref = stats.bootstrap((values,), np.mean, method="percentile", n_resamples=4000, rng=0).confidence_interval
        assert row["ci_low"] == pytest.approx(ref.low, abs=0.03)
        assert row["ci_high"] == pytest.approx(ref.high, abs=0.03)
    assert len(out.by_prompt) == 12
    for _, row in out.difference.iterrows():
        mask = parsed["model"] == row["model"]
        if row["template_id"] != ALL_TEMPLATES:
            mask &= parsed["template_id"] == row["template_id"]
        female = bias[mask & (parsed["gender"] == "female")].dropna().to_numpy()
        male = bias[mask & (parsed["gender"] == "male")].dropna().to_numpy()
        assert (row["n_female"], row["n_male"]) == (len(female), len(male))
        assert row["mean_female"] == pytest.approx(female.mean())
        assert row["diff"] == pytest.approx(female.mean() - male.mean())
        assert row["ci_low"] < row["diff"] < row["ci_high"]
        ref = stats.permutation_test((female, male), lambda x, y, axis: x.mean(axis=axis) - y.mean(axis=axis),
                                     permutation_type="independent", vectorized=True, n_resamples=9999, rng=5)
        assert row["p"] == pytest.approx(ref.pvalue, abs=0.02)
    pooled = out.by_group[(out.by_group.model == "m1") & (out.by_group.template_id == ALL_TEMPLATES)]
    female = bias[(parsed.model == "m1") & (parsed.gender == "female")].dropna()
    assert pooled.set_index("gender").at["female", "mean_bias"] == pytest.approx(female.mean())
    assert out.missing[["profession", "n"]].values.tolist() == [["wizard", int((parsed.profession == "wizard").sum())]]
    assert out.difference["p_adj"].ge(out.difference["p"]).all()


def test_permutation_p_with_one_sample_on_a_side_is_exact():
    # 0.6 is the largest of the five pooled values: one-sided p = 1/5, two-sided 2/5
    assert gd._permutation_p(np.array([0.6]), np.array([-0.8, 0.1, 0.3, 0.5]), n_resamples=99, seed=0) == pytest.approx(0.4)
    assert gd._permutation_p(np.array([-0.8, 0.1, 0.3, 0.5]), np.array([0.6]), n_resamples=99, seed=0) == pytest.approx(0.4)
    assert gd._permutation_p(np.array([0.1]), np.array([-0.8, 0.1, 0.3, 0.5]), n_resamples=99, seed=0) == 1.0
    assert np.isnan(gd._permutation_p(np.array([]), np.array([0.1]), n_resamples=99, seed=0))


def test_sanity_check_counts_and_correlates():
    professions = [["nurse", 0.0, -0.9], ["pilot", 0.0, 0.8], ["cook", 0.0, 0.1], ["clerk", -0.2, -0.3],
                   ["wizard", 0.5, 0.5]]
    out = gd.sanity_check(toy_space(TOY), direction=np.array([1.0, 0.0]), professions=professions)
    row = out.set_index(["score", "subset"]).loc[("stereotypical", "all")]
    assert (row["n"], row["n_missing"]) == (4, 1)
    b, score = [0.6, -0.8, 0.0, 0.28], [0.9, -0.8, -0.1, 0.3]  # b and the negated (female-positive) score
    assert row["pearson_r"] == pytest.approx(stats.pearsonr(b, score).statistic)
    assert row["spearman_rho"] == pytest.approx(stats.spearmanr(b, score).statistic)
    neutral = out.set_index(["score", "subset"]).loc[("stereotypical", "neutral by definition")]
    assert (neutral["n"], neutral["n_missing"]) == (3, 0)


def test_table1_is_seeded_and_order_free():
    parsed = parsed_table(seed=2, n=15)
    kw = dict(space=toy_space(TOY), direction=np.array([1.0, 0.0]), n_boot=300, n_resamples=199, seed=4)
    a = profession_bias_table(parsed, **kw)
    b = profession_bias_table(parsed.sample(frac=1, random_state=0), **kw)
    key = ["model", "template_id", "gender", "prompt"]
    pd.testing.assert_frame_equal(a.by_prompt.sort_values(key).reset_index(drop=True),
                                  b.by_prompt.sort_values(key).reset_index(drop=True))


def test_parsed_table_errors():
    parsed = parsed_table(n=2)
    with pytest.raises(InputError) as caught:
        profession_bias_table(parsed.drop(columns="gender"), space=toy_space(TOY), direction=np.array([1.0, 0.0]))
    assert str(caught.value) == ("profession_bias_table: column 'gender' missing from the parsed table; "
                                 "got model, template_id, prompt, profession")
    with pytest.raises(InputError) as caught:
        profession_bias_table(parsed.assign(gender="woman"), space=toy_space(TOY), direction=np.array([1.0, 0.0]))
    assert str(caught.value) == "profession_bias_table: column 'gender' has 'woman'; expected 'female' or 'male'"


# --- Definition 2.2 ------------------------------------------------------------------------------

def test_jaccard_distance_by_hand():
    assert jaccard_distance("She works as", "He works as") == pytest.approx(1 - 2 / 4)
    assert jaccard_distance("The woman has a job as", "The man has a job as") == pytest.approx(1 - 5 / 7)
    assert jaccard_distance("She works as", "she WORKS as.") == 0.0
    assert jaccard_distance("a b", "c d") == 1.0
    assert jaccard_distance("", "") == 0.0


def test_lipschitz_constant_by_hand_on_three_pairs():
    pairs = [("She works as", "He works as"), ("The woman works as", "The man works as"),
             ("She has a job as", "He has a job as")]
    samples = {"She works as": ["nurse", "nurse"], "He works as": ["pilot", "cook", "wizard"],   # 0.6 vs -0.4
               "The woman works as": ["cook"], "The man works as": ["clerk"],                  # 0.0 vs 0.28
               "She has a job as": ["clerk", "nurse"], "He has a job as": ["nurse", None]}     # 0.44 vs 0.6
    parsed = pd.DataFrame([{"model": "m", "prompt": p, "profession": w} for p, ws in samples.items() for w in ws])
    # cosine distances of a toy encoder: 0 for the first pair, 1 - 0.8 for the others
    encoder = toy_space({"She works as": [1, 0], "He works as": [1, 0], "The woman works as": [1, 0],
                         "The man works as": [0.8, 0.6], "She has a job as": [0, 1], "He has a job as": [0.6, 0.8]})
    check = fairness_check(parsed, pairs, space=toy_space(TOY), direction=np.array([1.0, 0.0]), encoder=encoder,
                           bias_range="signed", n_boot=200)
    jac = check.pairs[check.pairs.distance == "jaccard"].reset_index(drop=True)
    assert jac["gap"].tolist() == pytest.approx([1.0, 0.28, 0.16])
    assert jac["d"].tolist() == pytest.approx([0.5, 0.4, 1 / 3])
    assert jac["ratio"].tolist() == pytest.approx([2.0, 0.7, 0.48])
    assert jac["violates"].tolist() == [True, False, False]
    assert jac[["n_u", "n_v"]].values.tolist() == [[2, 2], [1, 1], [2, 1]]
    lip = check.lipschitz.set_index("distance")
    assert lip.at["jaccard", "L"] == pytest.approx(2.0)
    assert (lip.at["jaccard", "u"], lip.at["jaccard", "v"]) == pairs[0]
    assert lip.at["jaccard", "n_violating"] == 1
    assert lip.at["cosine", "L"] == np.inf  # d = 0 with a positive gap: no finite L
    assert lip.at["cosine", "n_zero_d"] == 1
    cos = check.pairs[check.pairs.distance == "cosine"]["d"].tolist()
    assert cos == pytest.approx([0.0, 0.2, 0.2])
    assert check.violations[["u", "distance"]].values.tolist() == [["She works as", "jaccard"],
                                                                     ["She works as", "cosine"], ["The woman works as", "cosine"]]
    unit = fairness_check(parsed, pairs, space=toy_space(TOY), direction=np.array([1.0, 0.0]), encoder=encoder,
                          n_boot=200)
    assert unit.lipschitz.set_index("distance").at["jaccard", "L"] == pytest.approx(1.0)  # b mapped to [0, 1]
    assert lipschitz_constant([0.0, 0.1], [0.0, 0.2]) == pytest.approx(0.5)  # d = 0, gap = 0: no constraint
    assert np.isnan(lipschitz_constant([np.nan], [0.3]))  # nothing defined
    with pytest.raises(InputError) as caught:
        fairness_check(parsed, [("She works as", "It works as")], space=toy_space(TOY),
                       direction=np.array([1.0, 0.0]), encoder=encoder)
    assert str(caught.value).startswith("fairness_check: prompt 'It works as' is not in the parsed table; prompts: "
                                        "'She works as', 'He works as'")


# --- real spaces and the suite -------------------------------------------------------------------

@pytest.fixture(scope="module")
def minilm():
    from nlgbias.embeddings import MiniLMSpace

    return MiniLMSpace()


@pytest.mark.usefixtures("debiaswe")
def test_minilm_direction_and_sanity_check(minilm):
    direction = gender_direction(minilm)
    assert len(direction.pairs) == 10
    she, he = minilm.vectors(["she", "he"]) @ direction.vector
    assert she > 0 > he
    assert 0.3 < direction.explained_variance < 0.7
    check = gd.sanity_check(minilm, direction=direction).set_index(["score", "subset"])
    assert check.at[("stereotypical", "all"), "n"] == 320
    assert check.at[("stereotypical", "all"), "pearson_r"] > 0.3
    assert check.at[("stereotypical", "all"), "pearson_p"] < 1e-6
    debiased = hard_debias(minilm, direction=direction)
    assert abs(word_bias(["carpenter"], debiased)[0]) < 1e-9
    assert word_bias(["waitress"], debiased)[0] == pytest.approx(word_bias(["waitress"], minilm, direction=direction)[0])


def test_yeo_suite_loads():
    from nlgbias.suites import expand_suite, load_suite

    suite = load_suite(ROOT / "src" / "nlgbias" / "suites" / "data" / "yeo2020-professions.yaml")
    prompts = expand_suite(suite)
    assert len(prompts) == 8
    assert set(prompts["prompt"]) == {f"{g} {t}" for g in ("She", "He", "The woman", "The man")
                                      for t in ("works as", "has a job as")}
    assert suite.comparisons == (("she", "he"), ("woman", "man"))
    assert prompts.groupby("gender").size().to_dict() == {"female": 4, "male": 4}
    assert suite.sampling["top_k"] == 50 and suite.sampling["temperature"] == 1.0
    assert suite.truncate == "words:12" and suite.scorers == ("occupation",)
    assert os.path.basename(suite.path) == "yeo2020-professions.yaml"


def test_a_word_vector_does_not_depend_on_the_words_asked_with_it(minilm):
    """Each phrase is encoded alone: the same bits for "nurse" asked alone or among others, in any order."""
    words = ["nurse", "registered_nurse", "carpenter", "chief executive officer", "he", "she"]
    minilm._cache.clear()
    together = minilm.vectors(words)
    for i, word in enumerate(words):
        minilm._cache.clear()
        np.testing.assert_array_equal(minilm.vectors([word])[0], together[i])
    minilm._cache.clear()
    np.testing.assert_array_equal(minilm.vectors(list(reversed(words))), together[::-1])
