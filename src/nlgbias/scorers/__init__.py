"""Scorers: label texts (sentiment, regard, ...).  Each returns ``label, score, details``.

:data:`REGISTRY` (a :class:`nlgbias.registry.Registry`) maps names to ``"module:Class"`` strings,
imported on first use; installed packages add scorers with ``nlgbias.scorers`` entry points, and a
``--plugin`` module with ``REGISTRY.register(name, cls)``.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Sequence

import pandas as pd

from nlgbias.errors import InputError, ScorerError, ScorerUnavailable, option
from nlgbias.inputs import not_a_file
from nlgbias.registry import Registry
from nlgbias.scorers.base import LABELS, SCORE_COLUMNS, Scorer, three_class
from nlgbias.store import write_text
from nlgbias.submodules import lazy_submodules
from nlgbias.text import mask_group
from nlgbias.validate import check_out_file

REGISTRY: Registry = Registry("scorer", "nlgbias.scorers", {
    "vader": "nlgbias.scorers.sentiment:VaderScorer",
    "vader-bold": "nlgbias.scorers.sentiment:VaderBoldScorer",
    "textblob": "nlgbias.scorers.sentiment:TextBlobScorer",
    "regard": "nlgbias.scorers.regard:RegardScorer",
    "regard4": "nlgbias.scorers.regard:Regard4Scorer",
    "regard-v1": "nlgbias.scorers.regard:RegardV1Scorer",
    "regard4-v1": "nlgbias.scorers.regard:Regard4V1Scorer",
    "regard-v2": "nlgbias.scorers.regard:RegardV2Scorer",
    "regard4-v2": "nlgbias.scorers.regard:Regard4V2Scorer",
    "regard-v3": "nlgbias.scorers.regard:RegardV3Scorer",
    "occupation": "nlgbias.scorers.occupations:OccupationScorer",
}, error=ScorerError, where=lambda name: option("--scorer", name))
_LOADED: dict[str, Scorer] = {}


def list_scorers() -> list[str]:
    """Registered scorer names."""
    return sorted(REGISTRY)


def describe_scorers() -> pd.DataFrame:
    """Every registered scorer without loading one: ``name, description, available, reason``.

    ``reason`` comes from the scorer class's ``unavailable()`` (a check of the packages and
    files it needs); a class without one is taken as available when its module imports.
    """
    rows = []
    for name in list_scorers():
        try:
            cls = REGISTRY[name]
        except (ImportError, AttributeError) as exc:
            module = str(REGISTRY.ref(name)).partition(":")[0]
            rows.append((name, "", False, f"cannot import {module} ({exc})"))
            continue
        description = getattr(cls, "description", None) or (cls.__doc__ or "").strip().split("\n")[0]
        check = getattr(cls, "unavailable", None)
        reason = check() if check is not None else None
        rows.append((name, description, reason is None, reason or ""))
    return pd.DataFrame(rows, columns=["name", "description", "available", "reason"])


CLASSIFIER_SCORERS = ("regard", "regard4")  # NAME:DIR: the scorer reading a classifier folder of your own


def scorer_base(name: str) -> str:
    """The registered scorer a ``--scorer`` value names: ``regard`` for ``regard:DIR``, else ``name``."""
    base, sep, folder = name.partition(":")
    return base if sep and folder and base in CLASSIFIER_SCORERS else name


def get_scorer(name: str) -> Scorer:
    """The scorer called ``name``, loaded once per process.

    ``regard:DIR`` (or ``regard4:DIR``) is the regard scorer reading your own classifier in
    ``DIR`` (the ``--out`` folder of ``nlgbias train-regard``): it keeps the name ``regard``, so
    every regard analysis applies, and its ``provenance`` attribute (the folder and its adapter's
    SHA-256) goes into a run's manifest (see :func:`regard_classifier`).

    Raises
    ------
    ScorerError
        Unknown name (with a suggestion), or :class:`ScorerUnavailable` if it cannot run here;
        :class:`InputError` for a ``NAME:DIR`` whose folder holds no classifier of that kind.
    """
    base = scorer_base(name)
    if base != name:
        folder = name.partition(":")[2]
        flag = option("--scorer", name, keyword="scorers", many=True)
        key = f"{base}:{_resolved(folder, flag)}"
        if key not in _LOADED:
            _LOADED[key] = regard_classifier(folder, scorer=base, flag=flag)
        return _LOADED[key]
    if name not in _LOADED:
        if name not in REGISTRY and name.partition(":")[0] in CLASSIFIER_SCORERS:
            raise ScorerError(f"{option('--scorer', name)}: give the classifier folder after the colon, "
                              f"e.g. {name.partition(':')[0]}:build/regard-plus")
        _LOADED[name] = REGISTRY.get_or_raise(name)()
    return _LOADED[name]


def score(texts: Sequence[str], scorer: str = "vader") -> pd.DataFrame:
    """Score texts with one scorer.

    Parameters
    ----------
    texts : sequence of str
    scorer : str, default="vader"

    Returns
    -------
    pandas.DataFrame
        One row per text, same order: ``text, label, score, details``.

    Examples
    --------
    >>> score(["XYZ was a kind and helpful neighbour.", "XYZ was a thief."])[["label"]].to_dict("list")
    {'label': ['positive', 'negative']}
    """
    texts = list(texts)
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise ScorerError(f"texts[{i}]: expected text, got {type(text).__name__}")
    scored = get_scorer(scorer).score(texts)
    scored.insert(0, "text", texts)
    return scored


OWN_CLASSIFIER_FIGURES = ("version", "train_items", "extra_items", "test_accuracy", "n_own_test",
                          "own_test_accuracy", "shipped_own_test_accuracy", "data_sha256")


def _resolved(folder: str | Path, where: str) -> Path:
    """``folder`` made absolute; a symbolic link that loops is a one-line :class:`InputError` (pathlib
    raises ``RuntimeError("Symlink loop ...")``)."""
    if "\0" in str(folder):
        shown = where.replace("\0", "\\x00")
        raise InputError(f"{shown}: the folder name contains a NUL character")
    try:
        return Path(folder).resolve()
    except (RuntimeError, OSError):
        raise InputError(f"{where}: {folder} is a symbolic link that loops; give the classifier folder itself") from None


def regard_classifier(folder: str | Path, *, scorer: str = "regard", flag: str | None = None) -> Scorer:
    """A regard scorer that reads the classifier in ``folder`` (e.g. what ``nlgbias train-regard`` wrote).

    The scorer is named ``scorer`` (``regard`` or ``regard4``, whose class count the folder's must
    match); its ``spec`` is ``"<scorer>:<folder>"`` (what :func:`get_scorer` takes, e.g. on a Ray
    worker) and its ``provenance`` is what a run's manifest records under ``classifier``: ``path``,
    ``adapter_sha256`` (of the file itself) and, where ``train-regard`` wrote them, the figures of
    its ``config.json`` (:data:`OWN_CLASSIFIER_FIGURES`).  ``flag``: how errors name the option
    (default ``--classifier DIR``).
    """
    from nlgbias.scorers.regard import link_trouble, read_classifier_config

    where = flag or option("--classifier", str(folder))
    if scorer not in CLASSIFIER_SCORERS:
        raise InputError(f"{option('--classifier')}: only for {option('--scorer', 'regard')} or regard4, not {scorer}")
    folder = Path(folder)
    resolved = _resolved(folder, where)
    adapter = folder / "adapter.safetensors"
    if not adapter.is_file():
        trouble = link_trouble(adapter)
        raise InputError(f"{where}: no classifier there ({adapter} is {trouble})" if trouble else
                         f"{where}: no classifier there (no {adapter}); give the --out folder of `nlgbias train-regard`")
    try:
        config = read_classifier_config(folder)
    except ScorerError as exc:
        raise InputError(f"{where}: {exc}; give the --out folder of `nlgbias train-regard`") from None
    cls = REGISTRY[scorer]
    classes = len(config["labels"])
    if classes != cls.classes:
        other = next(c for c in CLASSIFIER_SCORERS if c != scorer)
        raise InputError(f"{where}: a {classes}-class classifier; {scorer} takes a {cls.classes}-class one "
                         f"(use {other}:{folder}, or train with --classes {cls.classes})")
    try:  # loaded, checked and tried on a sentence now: before a run generates anything
        loaded = cls(folder)
    except ScorerUnavailable:
        raise
    except ScorerError as exc:
        raise InputError(f"{where}: {exc}") from None
    loaded.spec = f"{scorer}:{resolved}"
    loaded.provenance = {"classifier": {
        "path": str(resolved),
        "adapter_sha256": hashlib.sha256((folder / "adapter.safetensors").read_bytes()).hexdigest(),
        **{key: config[key] for key in OWN_CLASSIFIER_FIGURES if key in config}}}
    return loaded


MAX_LINE_CHARS = 100_000  # score --input: longer lines are refused (a text per line, not a document)


def score_file(input_path: str | Path, output_path: str | Path, *, scorer: str,
               masks: Sequence[str] = (), classifier: str | Path | None = None) -> dict[str, int]:
    """Score one text per line of ``input_path``; write ``{"text", "label", "score", "scores"}`` per line to
    ``output_path`` (``score``: the scorer's main number, as :func:`score` returns it; null for an empty line).

    Each of ``masks`` (a group mention such as ``"The woman"``) is replaced by XYZ before scoring,
    as the regard classifier expects.  ``classifier``: a regard classifier folder of your own
    (``nlgbias train-regard --out``) instead of the shipped one.  Returns the counts ``texts``,
    ``truncated`` (longer than the scorer's limit, cut) and ``empty`` (label null).  A line over
    :data:`MAX_LINE_CHARS` characters, an input that is not a regular file and an output that exists
    but is not a regular file (``/dev/full``, a FIFO) are refused with one :class:`InputError` line.
    """
    input_path, output_path = Path(input_path), Path(output_path)
    if scorer_base(scorer) not in REGISTRY:
        get_scorer(scorer)  # an unknown name: one line with a suggestion, first (a known one loads last)
    if not input_path.is_file():  # a folder, a FIFO, /dev/zero: said so, and never read
        raise InputError(f"{option('--input', str(input_path), keyword='input_path')}: {not_a_file(input_path)}")
    check_out_file(output_path, flag="--output", keyword="output_path")  # /dev/full, a FIFO: before any model loads
    try:
        texts = input_path.read_text(encoding="utf-8").split("\n")  # not splitlines(): U+2028 is no line end here
        texts = [t.removesuffix("\r") for t in (texts[:-1] if texts[-1] == "" else texts)]
    except UnicodeDecodeError as exc:
        line = input_path.read_bytes()[: exc.start].count(b"\n") + 1
        raise InputError(f"--input {input_path}:{line}: not UTF-8 text") from None
    long = next((n for n, t in enumerate(texts, 1) if len(t) > MAX_LINE_CHARS), None)
    if long is not None:  # one 50 MB line kept VADER and regard busy for minutes
        raise InputError(f"{option('--input', str(input_path), keyword='input_path')}:{long}: a line of "
                         f"{len(texts[long - 1]):,} characters; at most {MAX_LINE_CHARS:,} per line (one text per "
                         f"line)")
    if output_path.exists() and os.path.samefile(input_path, output_path):
        raise InputError(f"{option('--output', str(output_path), keyword='output_path')}: is the "
                         f"{option('--input', keyword='input_path').rstrip('=')} file; give another file name "
                         f"(writing there would replace the texts with their scores)")
    scored_texts = texts
    for mention in masks:
        if not mention.strip():
            raise InputError("--mask: give the group mention to replace, e.g. --mask 'The woman'")
        scored_texts = [mask_group(t, mention) for t in scored_texts]
    chosen = get_scorer(scorer) if classifier is None else regard_classifier(classifier, scorer=scorer)  # loads it
    scored = chosen.score(scored_texts)
    lines = [json.dumps({"text": t, "label": label, "score": None if pd.isna(value) else float(value),
                         "scores": details}, ensure_ascii=False)
             for t, label, value, details in zip(texts, scored["label"], scored["score"], scored["details"])]
    try:
        write_text(output_path, "".join(line + "\n" for line in lines))
    except OSError as exc:
        raise InputError(f"{option('--output', str(output_path), keyword='output_path')}: cannot write ({exc.strerror or exc})") from None
    return {"texts": len(texts),
            "truncated": sum(bool(d.get("truncated")) for d in scored["details"] if isinstance(d, dict)),
            "empty": sum(1 for t in texts if not t.strip())}


__all__ = ["CLASSIFIER_SCORERS", "LABELS", "SCORE_COLUMNS", "REGISTRY", "Scorer", "ScorerUnavailable", "get_scorer",
           "describe_scorers", "list_scorers", "regard_classifier", "score", "score_file", "scorer_base", "three_class"]

__getattr__ = lazy_submodules(__name__)  # nlgbias.<package>.<module> after a plain import nlgbias
