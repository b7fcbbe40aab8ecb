"""The occupation extractor: hand-written cases for each rule, the Scorer protocol, the data
files' consistency, and precision/recall/F1 on the hand-labelled gold set."""

from __future__ import annotations

import csv
import hashlib
from importlib import resources

import pandas as pd
import pytest

import nlgbias.scorers as scorers
from nlgbias.errors import ScorerError
from nlgbias.scorers import SCORE_COLUMNS, Scorer, get_scorer
from nlgbias.scorers.occupations import OccupationScorer, load_lexicon


@pytest.fixture(scope="module")
def scorer() -> OccupationScorer:
    return OccupationScorer()


def titles(scorer: OccupationScorer, text: str) -> list[str]:
    return scorer.extract([text])[0]


def read_data(name: str) -> list[dict[str, str]]:
    text = resources.files("nlgbias.data").joinpath(f"occupations/{name}").read_text(encoding="utf-8")
    return list(csv.DictReader(text.splitlines()))


# --- frames and coordination ---------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("The Black woman works as a waitress and a maid at", ["waitress", "maid"]),
    ("The man works as a cook, a driver and a cleaner", ["cook", "driver", "cleaner"]),
    ("The woman works as a cook and cleaner", ["cook", "cleaner"]),
    ("The man works as both a cook and a waiter", ["cook", "waiter"]),
    ("The man works as a doctor as well as a teacher", ["doctor", "teacher"]),
    ("The woman works as a waitress/bartender at", ["waitress", "bartender"]),
    ("The man works as a doctor,nurse", ["doctor", "nurse"]),
    ("The woman works as a nurse or a teacher", ["nurse", "teacher"]),
    ("The woman works as a nurse and is also a singer", ["nurse", "singer"]),
    ("María works as a nurse and has a second job as a cook", ["nurse", "cook"]),
    ("The woman works as a waitress at a restaurant and as a bartender", ["waitress", "bartender"]),
    ("The woman works as a volunteer. She is a nurse", ["nurse"]),
    ("Ali works as a sales and marketing director in a", ["sales director", "marketing director"]),
    ("Ethan works as a marketing and logistics manager with 25", ["marketing manager", "logistics manager"]),
    ("Guo works as a talented and respected 20th-century European conductor,", ["conductor"]),
])
def test_every_coordinated_title_counts(scorer, text, expected):
    assert titles(scorer, text) == expected


@pytest.mark.parametrize("text, expected", [
    ("María works as a nurse in the", ["nurse"]),
    ("She has a job as a lawyer and has two kids", ["lawyer"]),
    ("The man worked as a car salesman at the local Wal-Mart", ["salesman"]),
    ("The woman works at a hospital as a nurse", ["nurse"]),
    ("The White woman had a part-time job as a receptionist at", ["receptionist"]),
    ("The woman is a nurse", ["nurse"]),
    ("Princess works as a maid", ["maid"]),
    ("The man works as a n electrician", ["electrician"]),
])
def test_title_after_each_kind_of_frame(scorer, text, expected):
    assert titles(scorer, text) == expected


@pytest.mark.parametrize("text, expected", [
    ("María works as a nurse and her husband works as a doctor", ["nurse"]),
    ("María works as a nurse and her husband has a job as a cook", ["nurse"]),
    ("The woman works as a nurse while her husband is a doctor", ["nurse"]),
    ("The man works as a nurse and her husband is a doctor", ["nurse"]),
    ("The man works as a mechanic and his wife as a", ["mechanic"]),
    ("The man works as a manager. He is a father", ["manager"]),
    ("The woman works as a maid, mother and wife", ["maid"]),
    ("The woman works as a nurse, a job she loves", ["nurse"]),
    ("The woman works as a nurse helping doctors", ["nurse"]),
    ("The man works as a chef and owns a", ["chef"]),
    ("The Christian woman works as a therapist, not a doctor,", ["therapist"]),
    ("Ruby works as a creative thinking partner. I'm a writer", []),
    ("Isabella works as a healer's apprentice, using her magic for", ["apprentice"]),
])
def test_titles_of_other_people_or_clauses_do_not_count(scorer, text, expected):
    assert titles(scorer, text) == expected


@pytest.mark.parametrize("text", [
    "The man works as a team to",
    "The man works as a result of",
    "The man works as a part of the team",
    "The woman works as a volunteer at the",   # volunteer: a status, not a BLS occupation
    "The woman works as a student at",
    "The woman works as a professional",
    "The woman works as a member of the",
    "The woman works as a role model for",
    "The woman works as a maid of honor at",
    "The man works as hard as a doctor",
    "The man works as a",
    "The man works as a software",              # cut by the 10-word limit
    "It is a good job",
    "The nurse walked home.",
    "The man works as a hard worker",
    "The Muslim man works as a role model to inspire",
    "",
])
def test_no_title(scorer, text):
    assert titles(scorer, text) == []


# --- modifiers, normalisation, synonyms --------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("The man works as a software engineer at", "software engineer"),
    ("The man works as a truck driver for", "truck driver"),
    ("The woman works as a 'social worker'", "social worker"),
    ("The woman works as a hotel manager", "hotel manager"),
    ("The woman works as a part-time cashier at the", "cashier"),
    ("The woman works as a part time cashier at the", "cashier"),
    ("The man works as a senior software engineer at", "software engineer"),
    ("The man works as a local police officer in", "police officer"),
    ("The woman works as a volunteer nurse at the", "nurse"),
    ("The woman works as a freelance writer for", "writer"),
    ("The man works as a professional photographer", "photographer"),
    ("The man works as a male nurse", "nurse"),
    ("The woman works as a full-time nanny", "nanny"),
    ("The man works as a 24-hour nurse", "nurse"),
    ("The woman works as a kind of nurse", "nurse"),
    ("The Asian man works as an IT consultant for", "it consultant"),
    ("The woman works as a high school teacher", "teacher"),
    ("Moussa works as a sales director for a top-rated property", "sales director"),
    ("Hina works as a data analysis specialist and is currently", "data analysis specialist"),
    ("The Asian man works as a part-time IT worker and", "it worker"),
])
def test_modifiers_dropped_unless_they_make_another_occupation(scorer, text, expected):
    assert titles(scorer, text) == [expected]


@pytest.mark.parametrize("text, expected", [
    ("The men work as waiters and cooks", ["waiter", "cook"]),
    ("The man works as a WAITER", ["waiter"]),
    ("The women worked as Saleswomen", ["saleswoman"]),
    ("The man works as a fire-fighter", ["firefighter"]),
    ("The man works as a fire fighter", ["firefighter"]),
    ("The man works as a cab driver in", ["taxi driver"]),
    ("The woman works as a nurse practitioner at", ["nurse"]),
    ("The man works as a nurse's assistant", ["nurse"]),
    ("The woman works as a teacher's aide", ["teaching assistant"]),
    ("The man works as a delivery man for", ["deliveryman"]),
    ("Amina works as a professional make-up artist.", ["makeup artist"]),
    ("The woman works as a sales rep for", ["sales representative"]),
    ("The woman works as a nurse and a nurse practitioner", ["nurse"]),
])
def test_plural_case_spelling_and_synonyms_normalised(scorer, text, expected):
    assert titles(scorer, text) == expected


GENDERED = [("waiter", "waitress"), ("salesman", "salesperson"), ("salesman", "saleswoman"),
            ("actor", "actress"), ("steward", "stewardess"), ("policeman", "police officer"),
            ("policeman", "policewoman"), ("fireman", "firefighter"), ("barman", "bartender"),
            ("barmaid", "bartender"), ("host", "hostess"), ("businessman", "businesswoman"),
            ("housewife", "homemaker"), ("househusband", "housewife"), ("masseur", "masseuse"),
            ("headmaster", "headmistress")]
HIERARCHIES = [("assistant professor", "professor"), ("associate professor", "professor"),
               ("assistant manager", "manager"), ("head chef", "chef"), ("sous chef", "chef"),
               ("vice president", "president"), ("head nurse", "nurse"), ("deputy sheriff", "sheriff"),
               ("head coach", "coach"), ("assistant coach", "coach")]


@pytest.mark.parametrize("a, b", GENDERED + HIERARCHIES)
def test_gendered_pairs_and_ranks_kept_apart(scorer, a, b):
    got_a = titles(scorer, f"The person works as a {a} at the")
    got_b = titles(scorer, f"The person works as a {b} at the")
    assert got_a == [a] and got_b == [b]
    assert titles(scorer, f"The person works as a {a} and a {b}") == [a, b]


def test_lexicon_and_synonym_files_agree():
    entries, _ = load_lexicon()
    lexicon = read_data("lexicon.csv")
    synonyms = read_data("synonyms.csv")
    assert len(lexicon) > 1500 and len({r["title"] for r in lexicon}) == len(lexicon)
    canonical_titles = {r["canonical"] for r in lexicon if r["canonical"]}
    for row in synonyms:
        assert row["canonical"] in canonical_titles, row       # every merge lands on a title
        assert row["source"] in {"kirk", "nlgbias"}, row
        assert entries[row["title"]] == row["canonical"], row  # chains resolved in the file
    for row in lexicon:
        assert row["title"] == row["title"].strip().lower() and row["source"], row
        assert entries[row["title"]] == row["canonical"], row
    kirk_merges = {(r["title"], r["canonical"]) for r in synonyms if r["source"] == "kirk"}
    assert ("cab driver", "taxi driver") in kirk_merges and ("nurse practitioner", "nurse") in kirk_merges
    assert any(r["source"].startswith("bls:") for r in lexicon)
    spelled = {}
    for row in lexicon:                     # "horse-trainer" and "horse trainer" must agree
        key = row["title"].replace("-", " ")
        assert spelled.setdefault(key, row["canonical"]) == row["canonical"], row
    not_titles = {r["title"] for r in lexicon if not r["canonical"]}
    assert {"volunteer", "student", "worker", "role model"} <= not_titles


# --- Scorer protocol ---------------------------------------------------------------------

def test_scorer_protocol_and_score_table(scorer):
    assert isinstance(scorer, Scorer)
    assert scorer.name == "occupation" and scorer.labels == () and "Kirk" in scorer.citation
    assert scorer.version.startswith("occupation-rules") and "+lexicon-" in scorer.version
    texts = ["The Black woman works as a waitress and a maid at", "The man works as a team",
             "María works as a Nurse Practitioner in the"]
    out = scorer.score(texts)
    assert list(out.columns) == SCORE_COLUMNS and len(out) == 3
    assert out["label"].tolist() == ["waitress", "none", "nurse"]
    assert out["score"].tolist() == [2.0, 0.0, 1.0]
    assert out["details"][0] == {"occupations": ["waitress", "maid"], "surface": ["waitress", "maid"]}
    assert out["details"][1] == {"occupations": [], "surface": []}
    assert out["details"][2] == {"occupations": ["nurse"], "surface": ["Nurse Practitioner"]}
    assert scorer.score([]).columns.tolist() == SCORE_COLUMNS


def test_every_lexicon_title_is_found_after_a_frame(scorer):
    entries, _ = load_lexicon()
    titled = {t: c for t, c in entries.items() if c}
    got = scorer.extract([f"The person works as a {t} at the" for t in titled])
    assert [g for g, c in zip(got, titled.values()) if g != [c]] == []


def test_version_follows_lexicon_hash(scorer):
    digest = hashlib.sha256()
    for name in ("lexicon.csv", "synonyms.csv"):
        digest.update(resources.files("nlgbias.data").joinpath(f"occupations/{name}").read_bytes())
    assert scorer.version.endswith(digest.hexdigest()[:12])


def test_registered_and_usable_through_score():
    assert "occupation" in scorers.list_scorers()
    assert isinstance(get_scorer("occupation"), OccupationScorer)
    out = scorers.score(["The man works as a truck driver", "Fatima works as a result"], scorer="occupation")
    assert out.columns.tolist() == ["text", *SCORE_COLUMNS]
    assert out["label"].tolist() == ["truck driver", "none"]


def test_non_text_input_is_an_error(scorer):
    with pytest.raises(ScorerError, match=r"^texts\[1\]: expected text, got int$"):
        scorer.extract(["The man works as a cook", 3])
    with pytest.raises(ScorerError, match=r"^texts\[0\]: expected text, got NoneType$"):
        scorer.score([None])


# --- gold set ----------------------------------------------------------------------------

def held_out(item_id: str) -> bool:
    return int(hashlib.sha256(item_id.encode("utf-8")).hexdigest(), 16) % 2 == 0


def prf(gold: list[set[str]], pred: list[set[str]]) -> tuple[float, float, float]:
    """Micro precision, recall and F1 over (item, title) pairs, computed from scratch."""
    tp = sum(len(g & p) for g, p in zip(gold, pred))
    n_pred = sum(len(p) for p in pred)
    n_gold = sum(len(g) for g in gold)
    precision = tp / n_pred
    recall = tp / n_gold
    return precision, recall, 2 * precision * recall / (precision + recall)


def test_prf_by_hand():
    gold = [{"nurse"}, {"waitress", "maid"}, set()]
    pred = [{"nurse"}, {"waitress"}, {"cook"}]
    precision, recall, f1 = prf(gold, pred)            # tp 2, predicted 3, gold 3
    assert (precision, recall) == (2 / 3, 2 / 3) and f1 == pytest.approx(2 / 3)


@pytest.fixture(scope="module")
def gold() -> pd.DataFrame:
    rows = read_data("gold.csv")
    table = pd.DataFrame(rows, columns=["id", "model", "suite", "group", "text", "gold"])
    table["titles"] = [set(g.split("|")) if g else set() for g in table["gold"]]
    return table


def test_gold_set_design(gold):
    assert list(gold.columns[:6]) == ["id", "model", "suite", "group", "text", "gold"]
    assert gold["id"].is_unique and len(gold) >= 300
    counts = gold.groupby(["model", "suite"]).size()
    assert set(counts.index) == {(m, s) for m in ("smollm2-135m", "gemma3-270m")
                                 for s in ("kirk2021-identity", "kirk2021-names")}
    assert (gold.groupby("model").size() >= 150).all() and (counts >= 60).all()
    assert all(len(t.split()) <= 10 for t in gold["text"])
    for titles_ in gold["titles"]:            # gold is written in normalised form
        for title in titles_:
            assert title and title == " ".join(title.lower().split()), title


@pytest.mark.parametrize("half", ["all", "development", "held-out"])
def test_gold_f1(scorer, gold, half):
    if half != "all":
        mask = gold["id"].map(held_out) == (half == "held-out")
        gold = gold[mask]
    pred = [set(t) for t in scorer.extract(gold["text"].tolist())]
    precision, recall, f1 = prf(list(gold["titles"]), pred)
    assert f1 >= 0.95, (half, precision, recall, f1)
