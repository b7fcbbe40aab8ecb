"""The hand-written lexicons of the regard test suite, and their split into a train and a test half.

``nlgbias/data/checklist/lexicons.yaml`` holds nine lexicons (occupations by regard, traits,
events, positive framings, negations, neutral settings).  :func:`load_lexicons` reads them into
:class:`Entry` rows, each marked with its half by :func:`lexicon_halves`: only the ``train`` half
may be used to make training data; figures are reported on the ``test`` half.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterable

import yaml

from nlgbias.resources import data_path

SPLIT_SEED = "nlgbias-checklist-1"
HALVES = ("train", "test")
# The fewest entries each lexicon must hold (negations: trait and event negations together).
MINIMUM_SIZES = {"illegal_explicit_occupations": 80, "plain_occupations": 80, "admired_roles": 40,
                 "negative_traits": 80, "positive_traits": 80, "negative_events": 60, "positive_events": 30,
                 "positive_framings": 20, "negations": 20}


@dataclass(frozen=True)
class Entry:
    """One lexicon entry.

    ``lexicon``: the list it is in; ``kind``: its sub-list (``illegal``/``explicit`` occupations,
    ``trait``/``event`` negations, else ``""``); ``key``: the text its half is drawn from (the
    phrase; an event's ``event``; a trait negation's ``id``); ``value``: the phrase, the
    ``{"event", "charge"}`` of a negative event, or a trait negation's ``{template_id: sentence}``;
    ``half``: ``train`` or ``test``.
    """

    lexicon: str
    kind: str
    key: str
    value: Any
    half: str


def lexicon_halves(keys: Iterable[str], *, name: str, seed: str = SPLIT_SEED) -> dict[str, str]:
    """Split one lexicon's entries into halves: ``{key: "train" | "test"}``.

    Entries are ranked by the SHA-256 of ``"{seed}:{name}:{key}"``; the first ``n // 2`` are the
    train half, the rest (one more when ``n`` is odd) the test half.  The split depends only on
    the set of keys, not their order, and adding one entry moves at most one other entry across.

    >>> lexicon_halves(["a thief", "a pimp", "a forger", "a mugger"], name="demo")
    {'a forger': 'train', 'a mugger': 'test', 'a pimp': 'test', 'a thief': 'train'}
    """
    keys = sorted(set(keys))
    ranked = sorted(keys, key=lambda k: hashlib.sha256(f"{seed}:{name}:{k}".encode()).hexdigest())
    train = set(ranked[: len(ranked) // 2])
    return {k: ("train" if k in train else "test") for k in keys}


def _groups(raw: dict) -> list[tuple[str, str, list[tuple[str, Any]]]]:
    """(lexicon, kind, [(key, value)]) for every list in the YAML, in file order."""
    out: list[tuple[str, str, list[tuple[str, Any]]]] = []
    for name, body in raw.items():
        if name == "version":
            continue
        if name == "illegal_explicit_occupations":
            out += [(name, kind, [(p, p) for p in phrases]) for kind, phrases in body.items()]
        elif name == "negative_events":
            out.append((name, "", [(e["event"], dict(e)) for e in body]))
        elif name == "negations":
            out.append((name, "trait", [(n["id"], dict(n["forms"])) for n in body["trait"]]))
            out.append((name, "event", [(p, p) for p in body["event"]]))
        else:
            out.append((name, "", [(p, p) for p in body]))
    return out


@lru_cache(maxsize=1)
def load_lexicons() -> dict[str, tuple[Entry, ...]]:
    """Every lexicon, ``{name: (Entry, ...)}`` in file order, each entry marked with its half.

    Each sub-list (illegal and explicit occupations, trait and event negations) is split on its
    own, so both halves hold both kinds.

    Raises
    ------
    ValueError
        A duplicate entry within a lexicon (our own data: a test keeps it clean).
    """
    raw = yaml.safe_load(data_path("checklist", "lexicons.yaml").read_text(encoding="utf-8"))
    lexicons: dict[str, list[Entry]] = {}
    for name, kind, items in _groups(raw):
        keys = [k for k, _ in items]
        if len(set(keys)) != len(keys):
            twice = sorted(k for k in set(keys) if keys.count(k) > 1)
            raise ValueError(f"lexicons.yaml: {name}: duplicate entries {twice}")
        halves = lexicon_halves(keys, name=f"{name}/{kind}" if kind else name)
        lexicons.setdefault(name, []).extend(Entry(name, kind, k, v, halves[k]) for k, v in items)
    return {name: tuple(entries) for name, entries in lexicons.items()}


def lexicon_sizes() -> dict[str, dict[str, int]]:
    """``{lexicon: {"train": n, "test": n, "all": n}}``."""
    sizes = {}
    for name, entries in load_lexicons().items():
        counts = {h: sum(e.half == h for e in entries) for h in HALVES}
        sizes[name] = {**counts, "all": len(entries)}
    return sizes


def half_entries(name: str, half: str) -> list[Entry]:
    """The entries of lexicon ``name`` in ``half`` (``train``, ``test`` or ``all``), in file order."""
    return [e for e in load_lexicons()[name] if half == "all" or e.half == half]


__all__ = ["Entry", "HALVES", "MINIMUM_SIZES", "SPLIT_SEED", "half_entries", "lexicon_halves", "lexicon_sizes",
           "load_lexicons"]
