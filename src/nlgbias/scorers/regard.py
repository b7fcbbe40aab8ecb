"""The regard scorer slot (Sheng et al., 2019).

Regard needs a trained classifier, and none ships with this version of nlgbias.  Until one
does, asking for it raises :class:`ScorerUnavailable`; a run reports regard as not available
and scores nothing in its place.
"""

from __future__ import annotations

from nlgbias.errors import ScorerError

UNAVAILABLE = ("scorer regard: not available yet; no regard classifier ships with this nlgbias "
               "(the regard dataset and classifier are being built); use vader or textblob")


class ScorerUnavailable(ScorerError):
    """A known scorer that cannot run here (e.g. no trained weights installed)."""


class RegardScorer:
    """Placeholder that refuses to score rather than fake regard labels."""

    name = "regard"

    def __init__(self) -> None:
        raise ScorerUnavailable(UNAVAILABLE)
