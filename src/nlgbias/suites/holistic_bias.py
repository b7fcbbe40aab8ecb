"""HolisticBias (Smith et al. 2022): descriptors, nouns and templates -> noun phrases and sentences.

The data ship in ``nlgbias/data/holistic_bias/`` (v1.1, CC BY-SA 4.0; see its README).  This module
builds the dataset's noun phrases by the dataset's own rules, written here from its documentation:

``descriptor``
    The descriptor alone (``"Deaf"``); only where a template does not need a noun.
``descriptor_noun``
    Indefinite article, descriptor, noun (``"a Deaf grandma"``; plural ``"Deaf grandmas"``).  A
    descriptor with a gender (``"Latina"``) takes only the nouns of that gender; the article is the
    descriptor's own where the data give one (``"a US-born ..."``), else ``an`` before a vowel.
``noun_descriptor``
    A standalone phrase with a noun slot (``"a grandma who uses a wheelchair"``), filled with every noun;
    its descriptor is the phrase without article and noun (``"who uses a wheelchair"``).
``fixed_phrase``
    A standalone phrase without a noun slot (``"a wheelchair user"``), its own descriptor.
``noun``
    The noun alone (``"a grandma"``): the dataset's control, on no axis (``axis`` is ``"null"``).

The dataset's random stylistic variants (``I am`` for ``I'm``, hyphens removed, descriptor lower-cased,
final period dropped) are not applied: every sentence is the canonical one, so a descriptor's sentences
differ from another's only in the descriptor (docs/suites.md says why).
"""

from __future__ import annotations

import functools
import json
from typing import Any, Sequence

import pandas as pd

from nlgbias.resources import data_path

FOLDER = "holistic_bias"
VERSION = "v1.1"
NONE = "(none)"
NO_DATA = "no_data"
NOUN_PHRASE_TYPES = ("descriptor", "descriptor_noun", "noun_descriptor", "fixed_phrase", "noun")
# ROBBIE's HolisticBiasR: the types that stand as noun phrases (every one but the bare descriptor)
STANDING_TYPES = ("descriptor_noun", "noun_descriptor", "fixed_phrase", "noun")
COLUMNS = ["axis", "bucket", "descriptor", "descriptor_gender", "descriptor_preference", "noun", "plural_noun",
           "noun_gender", "noun_phrase", "plural_noun_phrase", "noun_phrase_type"]


@functools.lru_cache(maxsize=None)
def _json(name: str) -> Any:
    return json.loads(data_path(FOLDER, name).read_text(encoding="utf-8"))


def article(word: str) -> str:
    """The indefinite article before ``word``: ``an`` before a vowel letter, else ``a`` (the dataset's rule).

    >>> article("Amish"), article("Deaf")
    ('an', 'a')
    """
    return "an" if word[:1].lower() in "aeiou" else "a"


def nouns() -> list[tuple[str, str, str]]:
    """``(gender, noun, plural)`` of every noun, in the data's order (female, male, neutral)."""
    return [(gender, noun, plural) for gender, pairs in _json("nouns.json").items() for noun, plural in pairs]


def sentence_templates() -> pd.DataFrame:
    """The dataset's sentence templates: ``template_id, template, plural, must_be_noun, first_turn_only``.

    ``template`` has one slot, ``{noun_phrase}`` or ``{plural_noun_phrase}`` (``plural`` says which);
    ``template_id`` is ``t01``, ``t02``, ... in the data's order.
    """
    rows = []
    for i, (text, specs) in enumerate(_json("sentence_templates.json").items(), start=1):
        rows.append({"template_id": f"t{i:02d}", "template": text, "plural": "{plural_noun_phrase}" in text,
                     "must_be_noun": bool(specs.get("must_be_noun", False)),
                     "first_turn_only": bool(specs.get("first_turn_only", False))})
    return pd.DataFrame(rows)


def _descriptor_rows(axis: str, bucket: str, entry: str | dict) -> list[dict]:
    entry = {"descriptor": entry} if isinstance(entry, str) else entry
    descriptor = entry["descriptor"]
    gender = entry.get("gender", NONE)
    base = {"axis": axis, "bucket": bucket, "descriptor": descriptor, "descriptor_gender": gender,
            "descriptor_preference": entry.get("preference", NO_DATA)}
    rows = [{**base, "noun": NONE, "plural_noun": NONE, "noun_gender": NONE, "noun_phrase": descriptor,
             "plural_noun_phrase": descriptor, "noun_phrase_type": "descriptor"}]
    art = entry.get("article", article(descriptor))
    for noun_gender, noun, plural in nouns():
        if gender in (NONE, noun_gender):
            rows.append({**base, "noun": noun, "plural_noun": plural, "noun_gender": noun_gender,
                         "noun_phrase": f"{art} {descriptor} {noun}", "plural_noun_phrase": f"{descriptor} {plural}",
                         "noun_phrase_type": "descriptor_noun"})
    return rows


def _standalone_rows(axis: str, entry: str | dict) -> list[dict]:
    entry = {"noun_phrase": entry} if isinstance(entry, str) else entry
    singular = entry["noun_phrase"]
    plural = entry.get("plural_noun_phrase", singular)
    base = {"axis": axis, "bucket": NONE, "descriptor_gender": NONE,
            "descriptor_preference": entry.get("preference", NO_DATA)}
    if "{noun}" not in singular:
        return [{**base, "descriptor": singular, "noun": NONE, "plural_noun": NONE, "noun_gender": "neutral",
                 "noun_phrase": singular, "plural_noun_phrase": plural, "noun_phrase_type": "fixed_phrase"}]
    descriptor = singular.format(article="", noun="").strip()
    return [{**base, "descriptor": descriptor, "noun": noun, "plural_noun": plural_noun, "noun_gender": noun_gender,
             "noun_phrase": singular.format(article=article(noun), noun=noun),
             "plural_noun_phrase": plural.format(article="", noun=plural_noun).strip(),
             "noun_phrase_type": "noun_descriptor"}
            for noun_gender, noun, plural_noun in nouns()]


@functools.lru_cache(maxsize=None)
def _all_noun_phrases() -> pd.DataFrame:
    rows = [{"axis": "null", "bucket": NONE, "descriptor": NONE, "descriptor_gender": NONE,
             "descriptor_preference": NONE, "noun": noun, "plural_noun": plural, "noun_gender": gender,
             "noun_phrase": f"{article(noun)} {noun}", "plural_noun_phrase": plural, "noun_phrase_type": "noun"}
            for gender, noun, plural in nouns()]
    for axis, buckets in _json("descriptors.json").items():
        for bucket, entries in buckets.items():
            for entry in entries:
                rows += _descriptor_rows(axis, bucket, entry)
    for axis, entries in _json("standalone_noun_phrases.json").items():
        for entry in entries:
            rows += _standalone_rows(axis, entry)
    # the data list a few standalone phrases twice ("a Rasta"): each noun phrase once per descriptor
    return pd.DataFrame(rows, columns=COLUMNS).drop_duplicates(["axis", "descriptor", "noun_phrase"])


def noun_phrases(types: Sequence[str] = NOUN_PHRASE_TYPES) -> pd.DataFrame:
    """Every HolisticBias noun phrase of the given types, with the dataset's metadata.

    Returns
    -------
    pandas.DataFrame
        ``axis, bucket, descriptor, descriptor_gender, descriptor_preference, noun, plural_noun,
        noun_gender, noun_phrase, plural_noun_phrase, noun_phrase_type`` in the data's order
        (``"(none)"`` where a field does not apply; preference ``"no_data"`` where unreviewed); a phrase
        the data list twice for a descriptor is kept once.

    Examples
    --------
    >>> table = noun_phrases(["descriptor_noun"])
    >>> table.query("descriptor == 'Deaf'")["noun_phrase"].head(2).tolist()
    ['a Deaf woman', 'a Deaf lady']
    >>> noun_phrases(["descriptor_noun"]).query("descriptor == 'Latina'")["noun_gender"].unique().tolist()
    ['female']
    """
    unknown = [t for t in types if t not in NOUN_PHRASE_TYPES]
    if unknown:
        raise ValueError(f"noun phrase types {unknown}: not one of {', '.join(NOUN_PHRASE_TYPES)}")
    table = _all_noun_phrases()
    return table[table["noun_phrase_type"].isin(list(types))].reset_index(drop=True)


def descriptor_ids(table: pd.DataFrame) -> pd.Series:
    """One id per (axis, descriptor): the descriptor, or ``"<descriptor> (<axis>)"`` where the same
    descriptor is on several axes (``queer`` is under gender and sex and under sexual orientation)."""
    pairs = table[["axis", "descriptor"]].drop_duplicates()
    shared = set(pairs["descriptor"][pairs["descriptor"].duplicated(keep=False)])
    return pd.Series([f"{d} ({a.replace('_', ' ')})" if d in shared else d
                      for a, d in zip(table["axis"], table["descriptor"])], index=table.index)


def definite(noun_phrase: str) -> str:
    """``"a Deaf woman"`` -> ``"The Deaf woman"`` (ROBBIE's HolisticBiasR prompts start with the noun phrase).

    >>> definite("an Amish man"), definite("a wheelchair user")
    ('The Amish man', 'The wheelchair user')
    """
    for art in ("a ", "an "):
        if noun_phrase.startswith(art):
            return "The " + noun_phrase[len(art):]
    raise ValueError(f"noun phrase {noun_phrase!r} does not start with an indefinite article")


def sentences(types: Sequence[str] = NOUN_PHRASE_TYPES) -> pd.DataFrame:
    """Every HolisticBias sentence (template x noun phrase) of noun phrases of ``types``.

    A template that must have a noun gets no bare descriptor (the dataset's ``must_be_noun``).
    Columns: ``template_id, template, descriptor_id`` and the :func:`noun_phrases` columns, then
    ``text`` (the sentence).
    """
    phrases = noun_phrases(types)
    phrases = phrases.assign(descriptor_id=descriptor_ids(phrases))
    frames = []
    for t in sentence_templates().itertuples(index=False):
        rows = phrases[phrases["noun_phrase_type"] != "descriptor"] if t.must_be_noun else phrases
        slot = "plural_noun_phrase" if t.plural else "noun_phrase"
        text = [t.template.replace("{" + slot + "}", phrase) for phrase in rows[slot]]
        frames.append(rows.assign(template_id=t.template_id, template=t.template, text=text))
    return pd.concat(frames, ignore_index=True)[["template_id", "template", "descriptor_id", *COLUMNS, "text"]]


__all__ = ["NOUN_PHRASE_TYPES", "STANDING_TYPES", "article", "definite", "descriptor_ids", "noun_phrases", "nouns",
           "sentence_templates", "sentences"]
