"""Scorers: label texts (sentiment, regard, ...).  Each returns ``label, score, details``.

Registry names map to ``"module:Class"`` strings and are imported on first use.
"""

from __future__ import annotations

import difflib
import importlib
from typing import Sequence

import pandas as pd

from nlgbias.errors import ScorerError
from nlgbias.scorers.base import LABELS, SCORE_COLUMNS, Scorer, three_class
from nlgbias.errors import ScorerUnavailable

REGISTRY = {
    "vader": "nlgbias.scorers.sentiment:VaderScorer",
    "textblob": "nlgbias.scorers.sentiment:TextBlobScorer",
    "regard": "nlgbias.scorers.regard:RegardScorer",
    "regard4": "nlgbias.scorers.regard:Regard4Scorer",
    "occupation": "nlgbias.scorers.occupations:OccupationScorer",
}
_LOADED: dict[str, Scorer] = {}


def list_scorers() -> list[str]:
    """Registered scorer names."""
    return sorted(REGISTRY)


def get_scorer(name: str) -> Scorer:
    """The scorer called ``name``, loaded once per process.

    Raises
    ------
    ScorerError
        Unknown name (with a suggestion), or :class:`ScorerUnavailable` if it cannot run here.
    """
    if name not in REGISTRY:
        close = difflib.get_close_matches(name, REGISTRY, n=1)
        hint = f"did you mean {close[0]}? " if close else ""
        raise ScorerError(f"--scorer {name}: unknown scorer; {hint}available: {', '.join(list_scorers())}")
    if name not in _LOADED:
        module, cls = REGISTRY[name].split(":")
        _LOADED[name] = getattr(importlib.import_module(module), cls)()
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


__all__ = ["LABELS", "SCORE_COLUMNS", "REGISTRY", "Scorer", "ScorerUnavailable", "get_scorer",
           "list_scorers", "score", "three_class"]
