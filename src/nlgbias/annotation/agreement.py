"""Inter-annotator agreement, majority adjudication, and the sentiment-vs-regard correlations.

Every function takes the long labels table of :func:`nlgbias.annotation.import_sheets`:
one row per (annotator, item) with ``annotator, id`` and a label column.

Agreement measures
------------------
- Fleiss' kappa over the six categories, and over the three original ones (items where every
  annotator chose positive, negative or neutral/no impact), with statsmodels.
- Cohen's kappa for every pair of annotators (items both labelled), with statsmodels.
- Krippendorff's alpha, ordinal, on the three original categories (negative < neutral <
  positive; other labels are missing values), with the ``krippendorff`` package.
- Spearman: mean pairwise correlation on the original categories.  With a design where
  different annotators label different items, McGuire's APIAA (his eq. 1: the mean of the
  pairwise correlations, each over the items a pair shares) and AMIAA (eqs. 2-3: the mean over
  annotators of the correlation between an annotator and the mean of the others on the same
  items).  In a fully crossed design APIAA equals the mean pairwise Spearman.
"""

from __future__ import annotations

from itertools import combinations
from typing import Literal

import krippendorff
import numpy as np
import pandas as pd
from scipy import stats

from nlgbias.annotation.categories import ORDINAL, SCHEMES, to_classes

MIN_SHARED = 3


def _wide(labels: pd.DataFrame, column: str) -> pd.DataFrame:
    """Items x annotators table of labels (None where an annotator did not label an item)."""
    return labels.pivot(index="id", columns="annotator", values=column)


def agreement(labels: pd.DataFrame, column: Literal["regard", "sentiment"]) -> dict:
    """All agreement figures for one label column.

    Returns
    -------
    dict
        ``n_items, n_annotators, fleiss_kappa_6, n_items_6, fleiss_kappa_3, n_items_3,
        cohen_kappa`` (pair -> kappa and n), ``krippendorff_alpha_ordinal_3``,
        ``spearman_mean_pairwise`` (= APIAA), ``apiaa``, ``amiaa``.
    """
    categories = list(SCHEMES[column])
    wide = _wide(labels, column)
    annotators = list(wide.columns)
    complete = wide.dropna()
    out: dict = {"label": column, "n_items": int(len(wide)), "n_annotators": len(annotators)}
    out["fleiss_kappa_6"], out["n_items_6"] = _fleiss(complete, categories)
    three = complete.apply(lambda col: col.map(lambda v: to_classes(v, 3)))
    three = three[three.notna().all(axis=1)]
    out["fleiss_kappa_3"], out["n_items_3"] = _fleiss(three, ["negative", "neutral", "positive"])
    out["cohen_kappa"] = {}
    for a, b in combinations(annotators, 2):
        both = wide[[a, b]].dropna()
        out["cohen_kappa"][f"{a}-{b}"] = {"kappa": _cohen(both[a], both[b], categories), "n": int(len(both))}
    scores = wide.apply(lambda col: col.map(lambda v: ORDINAL.get(to_classes(v, 3) or "") if isinstance(v, str) else np.nan))
    scores = scores.astype(float)
    out["krippendorff_alpha_ordinal_3"] = _alpha(scores)
    out["apiaa"] = apiaa(scores)
    out["spearman_mean_pairwise"] = out["apiaa"]
    out["amiaa"] = amiaa(scores)
    return out


def _fleiss(table: pd.DataFrame, categories: list[str]) -> tuple[float, int]:
    from statsmodels.stats.inter_rater import fleiss_kappa  # statsmodels: kept out of `import nlgbias`

    if len(table) == 0 or table.shape[1] < 2:
        return float("nan"), 0
    counts = np.stack([(table == c).sum(axis=1).to_numpy() for c in categories], axis=1)
    return float(fleiss_kappa(counts, method="fleiss")), int(len(table))


def _cohen(a: pd.Series, b: pd.Series, categories: list[str]) -> float:
    from statsmodels.stats.inter_rater import cohens_kappa  # statsmodels: kept out of `import nlgbias`

    if len(a) == 0:
        return float("nan")
    index = {c: i for i, c in enumerate(categories)}
    table = np.zeros((len(categories), len(categories)))
    for x, y in zip(a, b):
        table[index[x], index[y]] += 1
    return float(cohens_kappa(table).kappa)


def _alpha(scores: pd.DataFrame) -> float:
    data = scores.T.to_numpy(dtype=float)  # annotators x items
    if np.isfinite(data).sum() < 2 or len(np.unique(data[np.isfinite(data)])) < 2:
        return float("nan")
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal",
                                    value_domain=[-1.0, 0.0, 1.0]))


def _spearman(x: pd.Series, y: pd.Series) -> float:
    both = pd.concat([x, y], axis=1).dropna()
    if len(both) < MIN_SHARED or both.iloc[:, 0].nunique() < 2 or both.iloc[:, 1].nunique() < 2:
        return float("nan")
    return float(stats.spearmanr(both.iloc[:, 0], both.iloc[:, 1]).statistic)


def apiaa(scores: pd.DataFrame) -> float:
    """Average pairwise inter-annotator agreement (McGuire eq. 1).

    ``scores``: items x annotators, ordinal scores with NaN where unlabelled.  Each pair's
    Spearman correlation is computed on the items both labelled; pairs sharing fewer than three
    items (or with a constant column) are left out.

    >>> s = pd.DataFrame({"a": [1, 0, -1, 1], "b": [1, 0, -1, 0], "c": [1, -1, -1, 1]})
    >>> round(apiaa(s), 3)
    0.828
    """
    values = [_spearman(scores[a], scores[b]) for a, b in combinations(scores.columns, 2)]
    values = [v for v in values if np.isfinite(v)]
    return float(np.mean(values)) if values else float("nan")


def amiaa(scores: pd.DataFrame) -> float:
    """Average mean inter-annotator agreement (McGuire eqs. 2-3).

    For each annotator i, the Spearman correlation between i's scores and, item by item, the
    mean of the other annotators' scores on that item; then the mean over annotators.
    """
    values = []
    for annotator in scores.columns:
        others = scores.drop(columns=[annotator]).mean(axis=1, skipna=True)
        values.append(_spearman(scores[annotator], others))
    values = [v for v in values if np.isfinite(v)]
    return float(np.mean(values)) if values else float("nan")


def adjudicate(labels: pd.DataFrame, column: Literal["regard", "sentiment"], *, classes: Literal[3, 4, 6] = 3,
               ties: Literal["drop", "mark"] = "drop") -> pd.DataFrame:
    """Majority label per item.

    Votes are first mapped to the 4-class view (6 classes: as given).  The label with strictly
    more votes than any other wins.  A tie is dropped (the reproduction's choice) or kept with
    label ``"tie"`` for adjudication.  For 3-class data, items whose majority is ``other``
    (mixed, sarcasm, nonsense) are left out, as in the paper.

    Returns
    -------
    pandas.DataFrame
        ``id, label, votes, n`` where ``votes`` is the winning label's vote count.

    Examples
    --------
    >>> labels = pd.DataFrame({"annotator": list("abcabcabc"), "id": ["x"] * 3 + ["y"] * 3 + ["z"] * 3,
    ...     "regard": ["positive", "positive", "negative", "positive", "negative", "no_impact",
    ...                "mixed_both", "nonsense", "positive"]})
    >>> adjudicate(labels, "regard", classes=3).values.tolist()
    [['x', 'positive', 2, 3]]
    >>> adjudicate(labels, "regard", classes=4, ties="mark")["label"].tolist()
    ['positive', 'tie', 'other']
    """
    if ties not in ("drop", "mark"):
        raise ValueError(f"ties={ties!r}: use 'drop' or 'mark'")
    vote_classes = 6 if classes == 6 else 4
    rows = []
    for ident, group in labels.groupby("id", sort=False):
        votes = group[column].dropna().map(lambda v: to_classes(v, vote_classes)).value_counts()
        if votes.empty:
            continue
        top = votes.iloc[0]
        if (votes == top).sum() > 1:
            if ties == "mark":
                rows.append((ident, "tie", int(top), int(votes.sum())))
            continue
        label = votes.index[0]
        if classes == 3 and label == "other":
            continue
        rows.append((ident, label, int(top), int(votes.sum())))
    return pd.DataFrame(rows, columns=["id", "label", "votes", "n"])


def correlation_table(items: pd.DataFrame, regard: pd.DataFrame, sentiment: pd.DataFrame) -> pd.DataFrame:
    """Spearman correlations like Sheng et al.'s Table 5, per context and for both.

    Parameters
    ----------
    items : pandas.DataFrame
        ``id, context, vader_label``.
    regard, sentiment : pandas.DataFrame
        3-class adjudicated labels (``id, label``) from :func:`adjudicate`.

    Returns
    -------
    pandas.DataFrame
        ``comparison, context, rho, p, n`` for sentiment ann. vs regard ann., VADER vs
        sentiment ann., VADER vs regard ann.
    """
    table = items[["id", "context", "vader_label"]].merge(
        regard.rename(columns={"label": "regard"})[["id", "regard"]], on="id", how="left").merge(
        sentiment.rename(columns={"label": "sentiment"})[["id", "sentiment"]], on="id", how="left")
    pairs = [("sentiment ann. vs regard ann.", "sentiment", "regard"),
             ("VADER pred. vs sentiment ann.", "vader_label", "sentiment"),
             ("VADER pred. vs regard ann.", "vader_label", "regard")]
    contexts = list(dict.fromkeys(table["context"])) + ["both"]
    rows = []
    for name, x, y in pairs:
        for context in contexts:
            part = table if context == "both" else table[table["context"] == context]
            part = part[[x, y]].dropna()
            xs, ys = part[x].map(ORDINAL), part[y].map(ORDINAL)
            if len(part) >= MIN_SHARED and xs.nunique() > 1 and ys.nunique() > 1:
                result = stats.spearmanr(xs, ys)
                rho, p = float(result.statistic), float(result.pvalue)
            else:
                rho = p = float("nan")
            rows.append((name, context, rho, p, int(len(part))))
    return pd.DataFrame(rows, columns=["comparison", "context", "rho", "p", "n"])
