"""The test cases of the regard suite: lexicon entries put into Sheng et al.'s ten templates.

:func:`build_cases` returns one row per sentence.  An MFT case is one sentence; an INV or DIR
case is a pair (``role`` ``base`` and ``variant``, sharing ``pair_id``), judged on the variant
against the base.  Every case is built from entries of one half only (see
:mod:`nlgbias.checklist.lexicons`), so a test-half case shares no lexicon entry with training data.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Literal, Sequence

import pandas as pd
import yaml

from nlgbias.checklist.lexicons import HALVES, Entry, half_entries
from nlgbias.resources import data_path
from nlgbias.suites import load_suite

CASE_COLUMNS = ["case_id", "case_type", "test", "template_id", "half", "role", "pair_id", "text", "expected",
                "entries"]
EXPECTATIONS = ("negative", "neutral", "positive", "same", "not positive", "not negative", "not more positive",
                "not more negative")
TESTS = ("MFT", "INV", "DIR")
Half = Literal["train", "test", "all"]


@dataclass(frozen=True)
class CaseType:
    """One kind of test case: ``test`` (MFT/INV/DIR), ``expected`` (one of ``EXPECTATIONS``),
    ``settled`` (the six-category labels the annotation guidelines give the judged sentence) and
    ``behaviour`` (the expected behaviour, in words)."""

    id: str
    test: str
    expected: str
    settled: tuple[str, ...]
    behaviour: str


@dataclass(frozen=True)
class Template:
    """A Sheng et al. template with XYZ for the group: ``prefix`` (``XYZ worked as``) and ``slot``,
    how a job or trait follows it (``working as {x}`` after ``earned money by``, ``being {x}``
    after ``known for``)."""

    id: str
    context: str
    prefix: str
    slot: str

    def fill(self, x: str) -> str:
        return f"{self.prefix} {self.slot.format(x=x)}"


SLOTS = {"earned_money_by": "working as {x}", "known_for": "being {x}", "well_known_for": "being {x}"}
# "XYZ started working as a cashier until being fired" does not read: "until" needs a job that lasted.
NO_UNTIL = {"started_working_as"}
# Templates a lexicon's entries are kept out of: "had a part-time job as an astronaut" does not read.
SIDE_JOB = {"part_time_job_as", "earned_money_by"}
LEXICON_TEMPLATES_LEFT_OUT = {"admired_roles": SIDE_JOB}


@lru_cache(maxsize=1)
def case_types() -> tuple[CaseType, ...]:
    """The case types of ``nlgbias/data/checklist/case_types.yaml``, in file order."""
    raw = yaml.safe_load(data_path("checklist", "case_types.yaml").read_text(encoding="utf-8"))
    return tuple(CaseType(c["id"], c["test"], c["expected"], tuple(c["settled"]), c["behaviour"])
                 for c in raw["case_types"])


@lru_cache(maxsize=1)
def templates() -> tuple[Template, ...]:
    """Sheng et al.'s ten templates, read from the ``sheng2019`` suite, with XYZ for the group."""

    return tuple(Template(t.id, t.context, t.text.replace("{group}", "XYZ"), SLOTS.get(t.id, "{x}"))
                 for t in load_suite("sheng2019").templates)


def _rank(items: Sequence, key: str) -> list:
    """``items`` in a fixed pseudo-random order drawn from ``key`` (a seeded hash of each item)."""
    return sorted(items, key=lambda item: hashlib.sha256(f"{key}|{_name(item)}".encode()).hexdigest())


def _pick(items: Sequence, k: int, key: str) -> list:
    return _rank(items, key)[:k]


def _name(item) -> str:
    return item.key if isinstance(item, Entry) else item.id if isinstance(item, Template) else str(item)


def _sentence(clause: str, tail: str = "") -> str:
    """``clause`` + ``tail`` + a full stop; a tail that starts with a comma is not spaced."""
    if tail and not tail.startswith(","):
        tail = " " + tail
    return f"{clause}{tail}."


def _job(template: Template, job: Entry, setting: Entry | None = None) -> str:
    clause = template.fill(job.value)
    return f"{clause} {setting.value}" if setting is not None and setting.value else clause


class _Builder:
    """Builds the cases of one half; each ``ct_<case type>`` method returns its rows."""

    def __init__(self, half: str) -> None:
        self.half = half
        self.occupation = [t for t in templates() if t.context == "occupation"]
        self.respect = [t for t in templates() if t.context == "respect"]
        self.lex = {name: half_entries(name, half) for name in
                    ("illegal_explicit_occupations", "plain_occupations", "admired_roles", "negative_traits",
                     "positive_traits", "negative_events", "positive_events", "positive_framings", "settings")}
        negations = half_entries("negations", half)
        self.trait_negations = [e for e in negations if e.kind == "trait"]
        self.event_negations = [e for e in negations if e.kind == "event"]

    def one(self, ct: CaseType, template: Template, text: str, entries: Sequence[Entry]) -> list[dict]:
        case_id = _case_id(ct.id, self.half, text)
        return [dict(case_id=case_id, case_type=ct.id, test=ct.test, template_id=template.id, half=self.half,
                     role="case", pair_id="", text=text, expected=ct.expected, entries=_entries(entries))]

    def pair(self, ct: CaseType, template: Template, base: str, variant: str, entries: Sequence[Entry]) -> list[dict]:
        pair_id = _case_id(ct.id, self.half, base + "\n" + variant)
        common = dict(case_type=ct.id, test=ct.test, template_id=template.id, half=self.half, pair_id=pair_id,
                      entries=_entries(entries))
        return [dict(case_id=f"{pair_id}/base", role="base", text=base, expected="", **common),
                dict(case_id=f"{pair_id}/variant", role="variant", text=variant, expected=ct.expected, **common)]

    def _setting(self, key: str) -> Entry:
        return _pick(self.lex["settings"], 1, key)[0]

    def _templates_for(self, lexicon: str, *, until: bool = False) -> list[Template]:
        """The occupation templates entries of ``lexicon`` go into (``until``: followed by "until being")."""
        left_out = LEXICON_TEMPLATES_LEFT_OUT.get(lexicon, set()) | (NO_UNTIL if until else set())
        return [t for t in self.occupation if t.id not in left_out]

    def _jobs_in_templates(self, ct: CaseType, lexicon: str) -> list[dict]:
        rows = []
        for job in self.lex[lexicon]:
            for t in self._templates_for(lexicon):
                setting = self._setting(f"{ct.id}|{job.key}|{t.id}")
                rows += self.one(ct, t, _sentence(_job(t, job, setting)), [job, setting])
        return rows

    def ct_mft_illegal_job(self, ct):
        return self._jobs_in_templates(ct, "illegal_explicit_occupations")

    def ct_mft_plain_job(self, ct):
        return self._jobs_in_templates(ct, "plain_occupations")

    def ct_mft_admired_role(self, ct):
        return self._jobs_in_templates(ct, "admired_roles")

    def _traits(self, ct: CaseType, lexicon: str) -> list[dict]:
        return [row for trait in self.lex[lexicon] for t in self.respect
                for row in self.one(ct, t, _sentence(t.fill(trait.value)), [trait])]

    def ct_mft_negative_trait(self, ct):
        return self._traits(ct, "negative_traits")

    def ct_mft_positive_trait(self, ct):
        return self._traits(ct, "positive_traits")

    def ct_mft_job_ended_by_wrongdoing(self, ct):
        rows = []
        until = self._templates_for("plain_occupations", until=True)
        for event in self.lex["negative_events"]:
            for job in _pick(self.lex["plain_occupations"], 3, f"{ct.id}|{event.key}"):
                t = _pick(until, 1, f"{ct.id}|{event.key}|{job.key}")[0]
                rows += self.one(ct, t, _sentence(_job(t, job), f"until being {event.value['event']}"), [job, event])
        return rows

    def ct_mft_positive_event(self, ct):
        rows = []
        for event in self.lex["positive_events"]:
            for job in _pick(self.lex["plain_occupations"], 3, f"{ct.id}|{event.key}"):
                t = _pick(self.occupation, 1, f"{ct.id}|{event.key}|{job.key}")[0]
                rows += self.one(ct, t, _sentence(_job(t, job), f"and was later {event.value}"), [job, event])
        return rows

    def ct_inv_framing_illegal_job(self, ct):
        rows = []
        for job in self.lex["illegal_explicit_occupations"]:
            for framing in _pick(self.lex["positive_framings"], 3, f"{ct.id}|{job.key}"):
                key = f"{ct.id}|{job.key}|{framing.key}"
                t = _pick(self.occupation, 1, key)[0]
                setting = self._setting(key)
                clause = _job(t, job, setting)
                rows += self.pair(ct, t, _sentence(clause), _sentence(clause, framing.value), [job, framing, setting])
        return rows

    def ct_inv_swap_plain_job(self, ct):
        rows, seen = [], set()
        jobs = self.lex["plain_occupations"]
        for job in jobs:
            for other in _pick([j for j in jobs if j is not job], 2, f"{ct.id}|{job.key}"):
                if frozenset((job.key, other.key)) in seen:
                    continue
                seen.add(frozenset((job.key, other.key)))
                key = f"{ct.id}|{job.key}|{other.key}"
                t = _pick(self.occupation, 1, key)[0]
                setting = self._setting(key)
                rows += self.pair(ct, t, _sentence(_job(t, job, setting)), _sentence(_job(t, other, setting)),
                                  [job, other, setting])
        return rows

    def ct_dir_negative_event(self, ct):
        rows = []
        for event in self.lex["negative_events"]:
            for job in _pick(self.lex["plain_occupations"], 3, f"{ct.id}|{event.key}"):
                t = _pick(self.occupation, 1, f"{ct.id}|{event.key}|{job.key}")[0]
                clause = _job(t, job)
                rows += self.pair(ct, t, _sentence(clause), _sentence(clause, f"and was later {event.value['event']}"),
                                  [job, event])
        return rows

    def ct_dir_negative_event_admired(self, ct):
        rows = []
        until = self._templates_for("admired_roles", until=True)
        for event in self.lex["negative_events"]:
            for role in _pick(self.lex["admired_roles"], 2, f"{ct.id}|{event.key}"):
                t = _pick(until, 1, f"{ct.id}|{event.key}|{role.key}")[0]
                clause = _job(t, role)
                rows += self.pair(ct, t, _sentence(clause), _sentence(clause, f"until being {event.value['event']}"),
                                  [role, event])
        return rows

    def ct_dir_positive_event(self, ct):
        rows = []
        for event in self.lex["positive_events"]:
            for job in _pick(self.lex["plain_occupations"], 3, f"{ct.id}|{event.key}"):
                t = _pick(self.occupation, 1, f"{ct.id}|{event.key}|{job.key}")[0]
                clause = _job(t, job)
                rows += self.pair(ct, t, _sentence(clause), _sentence(clause, f"and was later {event.value}"),
                                  [job, event])
        return rows

    def ct_dir_negation_trait(self, ct):
        rows = []
        by_id = {t.id: t for t in self.respect}
        for trait in self.lex["negative_traits"]:
            for negation in _pick(self.trait_negations, 2, f"{ct.id}|{trait.key}"):
                template_id = _pick(sorted(negation.value), 1, f"{ct.id}|{trait.key}|{negation.key}")[0]
                t = by_id[template_id]
                rows += self.pair(ct, t, _sentence(t.fill(trait.value)),
                                  _sentence(negation.value[template_id].format(trait=trait.value)), [trait, negation])
        return rows

    def ct_dir_negation_event(self, ct):
        rows = []
        for event in self.lex["negative_events"]:
            for negation in _pick(self.event_negations, 3, f"{ct.id}|{event.key}"):
                key = f"{ct.id}|{event.key}|{negation.key}"
                job = _pick(self.lex["plain_occupations"], 1, key)[0]
                t = _pick(self.occupation, 1, key)[0]
                clause = _job(t, job)
                cleared = negation.value.format(charge=event.value["charge"])
                rows += self.pair(ct, t, _sentence(clause, f"and was later {event.value['event']}"),
                                  _sentence(clause, f"and {cleared}"), [job, event, negation])
        return rows


def _case_id(case_type: str, half: str, text: str) -> str:
    return f"{case_type}-{half}-{hashlib.sha256(text.encode()).hexdigest()[:10]}"


def _entries(entries: Sequence[Entry]) -> str:
    """The lexicon entries a case is built from, as ``lexicon:key`` joined by ``; ``."""
    return "; ".join(f"{e.lexicon}:{e.key}" for e in entries)


def build_cases(*, half: Half = "all", case_type: str | None = None) -> pd.DataFrame:
    """Every test case of the suite, one row per sentence.

    Parameters
    ----------
    half : {"all", "train", "test"}, default="all"
        Cases built from the train or the test half of every lexicon, or both.
    case_type : str, optional
        Only this case type.

    Returns
    -------
    pandas.DataFrame
        ``CASE_COLUMNS``: ``case_id`` (unique), ``case_type``, ``test`` (MFT/INV/DIR),
        ``template_id`` (a Sheng et al. template), ``half``, ``role`` (``case`` for MFT; ``base`` or
        ``variant`` for INV and DIR), ``pair_id`` (INV and DIR; ``""`` for MFT), ``text``,
        ``expected`` (on the judged row; ``""`` on a base) and ``entries`` (the lexicon entries used).

    Examples
    --------
    >>> cases = build_cases(half="test", case_type="inv_framing_illegal_job")
    >>> cases[["role", "expected"]].drop_duplicates().values.tolist()
    [['base', ''], ['variant', 'not positive']]
    """
    if half not in ("all", *HALVES):
        raise ValueError(f"half={half!r}: expected one of all, train, test")
    types = [ct for ct in case_types() if case_type in (None, ct.id)]
    if not types:
        raise ValueError(f"case_type={case_type!r}: unknown; available: {', '.join(c.id for c in case_types())}")
    rows: list[dict] = []
    for h in (HALVES if half == "all" else (half,)):
        builder = _Builder(h)
        for ct in types:
            make: Callable[[CaseType], list[dict]] = getattr(builder, f"ct_{ct.id}")
            rows += make(ct)
    return pd.DataFrame(rows, columns=CASE_COLUMNS)


def count_cases(cases: pd.DataFrame) -> pd.DataFrame:
    """Test cases (MFT sentences and INV/DIR pairs) per half and case type: ``half, case_type, test, n``."""
    judged = cases[cases["role"] != "base"]
    return judged.groupby(["half", "case_type", "test"], sort=False).size().rename("n").reset_index()


__all__ = ["CASE_COLUMNS", "EXPECTATIONS", "TESTS", "CaseType", "Template", "build_cases", "case_types",
           "count_cases", "templates"]
