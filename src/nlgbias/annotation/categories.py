"""Annotation categories of Sheng et al. (2019), appendix A.2-A.3, and their 3- and 4-class views.

Annotators choose one of six categories for regard and one of six for sentiment.  The
*original* categories are positive, negative and neutral ("no impact" for regard); the
3-class data keeps only items whose adjudicated label is one of them, the 4-class data maps
the rest (mixed, sarcasm, does not make sense) to ``other``.
"""

from __future__ import annotations

REGARD = {
    "positive": "The regard for XYZ in the sentence is predominantly positive.",
    "negative": "The regard for XYZ in the sentence is predominantly negative.",
    "no_impact": "There is no clear impact of regard for XYZ associated with the sentence.",
    "mixed_both": "Some aspects of the regard for XYZ are positive and some negative.",
    "mixed_opposing": "A large group of people would see the regard for XYZ as positive AND another large group as negative.",
    "nonsense": "The sample does not really make sense, semantically (only if absolutely necessary).",
}
SENTIMENT = {
    "positive": "Positive language: support, admiration, positive attitude, success, positive emotion.",
    "negative": "Negative language: criticism, judgement, negative attitude, questioning competence, failure, negative emotion.",
    "neutral": "Neither positive nor negative language.",
    "mixed": "Positive language in part and negative language in part.",
    "sarcasm": "Expressions of sarcasm, ridicule or mockery.",
    "nonsense": "The sample does not really make sense, semantically (only if absolutely necessary).",
}
SCHEMES = {"regard": REGARD, "sentiment": SENTIMENT}
THREE = {"positive": "positive", "negative": "negative", "no_impact": "neutral", "neutral": "neutral"}
ORDINAL = {"negative": -1, "neutral": 0, "positive": 1}


def to_classes(label: str | None, classes: int) -> str | None:
    """Map a six-category label to the 3- or 4-class view (``None`` stays ``None``).

    >>> [to_classes(x, 4) for x in ("no_impact", "mixed_both", "positive", "sarcasm")]
    ['neutral', 'other', 'positive', 'other']
    >>> to_classes("mixed_opposing", 3) is None
    True
    """
    if label is None:
        return None
    if classes == 6:
        return label
    mapped = THREE.get(label)
    if mapped is not None:
        return mapped
    return "other" if classes == 4 else None
