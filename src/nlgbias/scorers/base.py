"""The interface every scorer implements, and the three-class labels of Sheng et al."""

from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable

import pandas as pd

LABELS = ("negative", "neutral", "positive")
SCORE_COLUMNS = ["label", "score", "details"]


@runtime_checkable
class Scorer(Protocol):
    """Labels texts.  Weights or lexicons load once, in the constructor.

    Attributes
    ----------
    name : str
        Registry name (``vader``, ``textblob``, ``regard``).
    version : str
        Changes whenever the weights, lexicon or rules change (part of the score cache key).
    labels : tuple of str
        The labels ``score`` can return, in display order.
    citation : str
        What to cite when reporting this scorer's numbers.

    Optional: ``spec`` (what :func:`nlgbias.scorers.get_scorer` takes to load the same scorer
    again, e.g. on a Ray worker; default ``name``) and ``provenance`` (a dict a run's manifest adds
    to the scorer's entry, e.g. the folder and hash of a classifier of your own).
    """

    name: str
    version: str
    labels: tuple[str, ...]
    citation: str

    def score(self, texts: Sequence[str]) -> pd.DataFrame:
        """One row per text, same order: ``label`` (str), ``score`` (float, the scorer's main
        number), ``details`` (dict of every number it computed)."""
        ...


def three_class(value: float, threshold: float) -> str:
    """``positive`` if value >= threshold, ``negative`` if value <= -threshold, else ``neutral``.

    >>> [three_class(v, 0.05) for v in (0.05, 0.0499, -0.05, -0.2)]
    ['positive', 'neutral', 'negative', 'negative']
    """
    if value >= threshold:
        return "positive"
    if value <= -threshold:
        return "negative"
    return "neutral"
