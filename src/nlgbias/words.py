"""Word lists shared by probes, metrics and analyses: pronoun families and the gender of a group.

>>> gender_side(pd.Series(["woman", "male", "nonbinary"])).tolist()
['female', 'male', nan]
"""

from __future__ import annotations

import pandas as pd

FAMILIES: dict[str, list[str]] = {
    "male": ["he", "his", "him"],
    "female": ["she", "her", "hers"],
    "neutral": ["they", "their", "them"],
}
"""Pronoun families, by the stripped words that name the probability columns."""

GENDER_SIDE = {"man": "male", "male": "male", "woman": "female", "female": "female"}
"""A group's ``gender`` attribute (man/woman or male/female) -> its side, ``male`` or ``female``."""


def gender_side(gender: pd.Series, *, female: str = "female", male: str = "male") -> pd.Series:
    """Each value's side named ``female`` / ``male`` (NaN for other values)."""
    return gender.map({word: female if side == "female" else male for word, side in GENDER_SIDE.items()})


__all__ = ["FAMILIES", "GENDER_SIDE", "gender_side"]
