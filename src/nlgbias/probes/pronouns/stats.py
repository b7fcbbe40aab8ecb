"""Gender-pronoun measures on the tables of :mod:`nlgbias.probes.pronouns.probabilities`.

Pure pandas/numpy/scipy: every function reads a *probabilities table*, one row per prompt with
a probability column per pronoun (``he``, ``she``, ... as made by
``continuation_probabilities``) plus the columns that define a cell (by default ``model`` and
``prompt_set``, which the caller adds when it stacks the tables of several models and prompt
sets), and returns a table.

* :func:`pronoun_measures` — per prompt: ``diff``, ``abs_diff``, ``ratio`` and the family sums.
* :func:`divergence_table` — per cell: KL divergence and Earth Mover's Distance between the
  distribution of P(he) and that of P(she) over prompts (Table 3 of the natural-sentence
  prompts paper).
* :func:`perturbation_table` — mean |P(he) − P(she)| for the Orig / Replace / Delete prompts
  (Table 4).
* :func:`certainty_table` — mean highest probability and mean gap to the second (Table 6).
* :func:`template_table` — per template: mean |P(he) − P(she)|, mean P(he)/P(she), mean highest
  probability (Table 8).
* :func:`score_correlation`, :func:`share_correlation` — validity: Pearson and Spearman
  correlation of the per-profession P(he) − P(she) with stereotype scores (Bolukbasi et al.'s
  ``professions.json``, see :func:`read_profession_scores`) or with the BLS women's share.

Tables of means and divergences have the same columns whatever the input: the cell columns,
then ``measure, n, value, ci_low, ci_high`` (and ``sd`` for means), with a percentile
bootstrap interval that resamples prompts within each cell.  Each cell draws from its own seed,
derived from ``seed`` and the cell's key, and resamples its values in sorted order, so row
order never changes a result.
"""

from __future__ import annotations

import json
import warnings
from functools import partial
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from nlgbias.defaults import CONFIDENCE, N_BOOT
from nlgbias.metrics.resampling import Means, Table, bootstrap, cell_rng, require_columns
from nlgbias.metrics.significance import fdr_bh
from nlgbias.words import FAMILIES

BY = ("model", "prompt_set")
MEASURE_COLUMNS = ["measure", "n", "value", "ci_low", "ci_high"]
MEAN_COLUMNS = ["measure", "n", "value", "sd", "ci_low", "ci_high"]
CORRELATION_COLUMNS = ["score", "method", "n", "n_unmatched", "r", "p"]

BAD_BINS = "bins: need an int >= 1 or at least two increasing edges; got {bins!r}"
OUTSIDE_BINS = "{where}: {count} values lie outside the bins [{low}, {high}]"
FEW_PROFESSIONS = "{where}: {n} matched professions in cell {cell}; correlations need at least 3, so r and p are nan"


def _cells(table: pd.DataFrame, by: Sequence[str]):
    """(key tuple, sub-table) per cell, in order of first appearance."""
    by = list(by)
    if not by:
        yield (), table
        return
    for key, sub in table.groupby(by, sort=False, dropna=False):
        yield (key if isinstance(key, tuple) else (key,)), sub


def _abs_diff(table: pd.DataFrame, he: str, she: str) -> np.ndarray:
    return np.abs(table[he].to_numpy(float) - table[she].to_numpy(float))


def _ratio(table: pd.DataFrame, he: str, she: str) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return table[he].to_numpy(float) / table[she].to_numpy(float)


# --- per prompt ---------------------------------------------------------------------------

def pronoun_measures(probs: pd.DataFrame, *, he: str = "he", she: str = "she",
                     families: Mapping[str, Sequence[str]] | None = FAMILIES) -> pd.DataFrame:
    """Per-prompt pronoun measures.

    Parameters
    ----------
    probs : pandas.DataFrame
        One row per prompt with probability columns ``he`` and ``she`` and, for each family,
        its words' columns.
    he, she : str, default="he", "she"
        The probability columns compared.
    families : mapping of str to list of str, or None, default=FAMILIES
        Family name -> probability columns summed into a column of that name; None for none.

    Returns
    -------
    pandas.DataFrame
        ``probs`` with added columns ``diff`` (P(he) − P(she)), ``abs_diff`` (\\|P(he) − P(she)\\|),
        ``ratio`` (P(he) / P(she): ``inf`` where P(she) is 0, ``nan`` where both are), and one
        column per family (``male``, ``female``, ``neutral``) with the sum of its words' probabilities.

    Examples
    --------
    >>> probs = pd.DataFrame({"he": [0.3, 0.1], "she": [0.1, 0.2], "his": [0.1, 0.0], "her": [0.0, 0.1]})
    >>> out = pronoun_measures(probs, families={"male": ["he", "his"], "female": ["she", "her"]})
    >>> out[["diff", "abs_diff", "ratio", "male", "female"]].round(3).values.tolist()
    [[0.2, 0.2, 3.0, 0.4, 0.1], [-0.1, 0.1, 0.5, 0.1, 0.3]]
    """
    where = "pronoun_measures"
    require_columns(probs, [he, she], where, "probabilities")
    families = dict(families or {})
    for words in families.values():
        require_columns(probs, list(words), where, "probabilities")
    out = probs.copy()
    out["diff"] = probs[he].to_numpy(float) - probs[she].to_numpy(float)
    out["abs_diff"] = np.abs(out["diff"].to_numpy())
    out["ratio"] = _ratio(probs, he, she)
    for name, words in families.items():
        out[name] = probs[list(words)].to_numpy(float).sum(axis=1)
    return out


# --- distributions over prompts -----------------------------------------------------------

def _edges(bins) -> np.ndarray:
    if isinstance(bins, (int, np.integer)) and not isinstance(bins, bool):
        if bins < 1:
            raise ValueError(BAD_BINS.format(bins=bins))
        return np.linspace(0.0, 1.0, int(bins) + 1)
    edges = np.asarray(bins, dtype=float)
    if edges.ndim != 1 or len(edges) < 2 or np.any(np.diff(edges) <= 0):
        raise ValueError(BAD_BINS.format(bins=bins))
    return edges


def _bin_index(values: np.ndarray, edges: np.ndarray, where: str) -> np.ndarray:
    outside = (values < edges[0]) | (values > edges[-1]) | np.isnan(values)
    if outside.any():
        raise ValueError(OUTSIDE_BINS.format(where=where, count=int(outside.sum()), low=edges[0], high=edges[-1]))
    # Bins are [e_k, e_k+1), the last one closed: as numpy.histogram.
    return np.clip(np.searchsorted(edges, values, side="right") - 1, 0, len(edges) - 2)


def _smoothed(counts: np.ndarray, pseudo_count: float) -> np.ndarray:
    counts = counts + pseudo_count
    return counts / counts.sum(axis=-1, keepdims=True)


def histogram_kl(p_values, q_values, *, bins=20, pseudo_count: float = 0.5) -> float:
    """KL divergence KL(P || Q) between the histograms of two samples over shared bins, in nats.

    Parameters
    ----------
    p_values, q_values : array-like of float
        The two samples (e.g. P(he | x) and P(she | x) over prompts x).
    bins : int or array-like, default=20
        An int k gives k equal-width bins on [0, 1] (the range of a probability); an array gives
        the bin edges.  Bins are ``[e_k, e_k+1)``, the last closed, as in ``numpy.histogram``;
        a value outside the edges is an error.
    pseudo_count : float, default=0.5
        Added to every bin's count of both samples before normalising (additive smoothing; 0.5 is
        the Jeffreys / Krichevsky–Trofimov choice), so that an empty bin of Q never makes KL
        infinite.  With ``pseudo_count=0`` the plain plug-in estimate (possibly ``inf``).

    Returns
    -------
    float
        ``sum_k p_k log(p_k / q_k)`` over the smoothed bin frequencies.

    Examples
    --------
    >>> round(histogram_kl([0.1, 0.1, 0.6], [0.1, 0.6, 0.6], bins=2, pseudo_count=0), 6)  # ln(2) / 3
    0.231049
    >>> histogram_kl([0.1, 0.2], [0.1, 0.2], bins=5)
    0.0
    """
    edges = _edges(bins)
    p = np.bincount(_bin_index(np.asarray(p_values, float), edges, "histogram_kl"), minlength=len(edges) - 1)
    q = np.bincount(_bin_index(np.asarray(q_values, float), edges, "histogram_kl"), minlength=len(edges) - 1)
    return float(stats.entropy(_smoothed(p, pseudo_count), _smoothed(q, pseudo_count)))


def divergence_table(probs: pd.DataFrame, *, by: Sequence[str] = BY, he: str = "he", she: str = "she",
                     bins=20, pseudo_count: float = 0.5, n_boot: int = N_BOOT, confidence: float = CONFIDENCE,
                     seed: int = 0) -> pd.DataFrame:
    """KL divergence and Earth Mover's Distance between P(he) and P(she) over the prompts of each cell.

    Parameters
    ----------
    probs : pandas.DataFrame
        One row per prompt; needs ``he``, ``she`` and every ``by`` column.
    by : sequence of str, default=("model", "prompt_set")
        Columns that define a cell.
    he, she : str
        The probability columns.
    bins, pseudo_count
        The histograms of :func:`histogram_kl` (default 20 equal-width bins on [0, 1], 0.5 added
        to every bin).
    n_boot : int, default=2000
        Bootstrap replicates; prompts are resampled within each cell, each keeping its pair
        (P(he), P(she)).
    confidence : float, default=0.95
    seed : int, default=0

    Returns
    -------
    pandas.DataFrame
        Two rows per cell, ``measure`` = ``"kl"`` then ``"emd"``: the ``by`` columns, then
        ``measure, n, value, ci_low, ci_high``; ``n`` is the number of prompts.

    Notes
    -----
    ``kl`` = KL(H_he || H_she) of the smoothed histograms (:func:`histogram_kl`), in nats.
    ``emd`` = ``scipy.stats.wasserstein_distance`` between the raw P(he) and P(she) values (the
    1-Wasserstein distance between the two empirical distributions, in probability units).
    Intervals are percentile bootstrap intervals.  Both statistics are biased upwards in small
    samples (two samples from one distribution still differ), so compare cells of similar n.

    References
    ----------
    The natural-sentence prompts paper, Table 3.

    Examples
    --------
    >>> probs = pd.DataFrame({"he": [0.1, 0.3, 0.5, 0.7], "she": [0.1, 0.1, 0.3, 0.3]})
    >>> out = divergence_table(probs, by=[], bins=2, n_boot=200)
    >>> out[["measure", "n"]].values.tolist(), round(float(out["value"].iloc[1]), 3)
    ([['kl', 4], ['emd', 4]], 0.2)
    """
    by = list(by)
    where = "divergence_table"
    require_columns(probs, by + [he, she], where, "probabilities")
    edges = _edges(bins)
    rows = []
    for key, cell in _cells(probs, by):
        h, s = cell[he].to_numpy(float), cell[she].to_numpy(float)
        order = np.lexsort((s, h))  # a canonical order, so the bootstrap ignores row order
        h, s = h[order], s[order]
        bh, bs = _bin_index(h, edges, where), _bin_index(s, edges, where)
        k, n = len(edges) - 1, len(h)
        if n:
            statistic = partial(_kl_emd, bins=(bh, bs, k), values=(h, s), pseudo_count=pseudo_count)
            value, low, high, _ = bootstrap(Table(n, statistic), rng=cell_rng(seed, where, *key), n_boot=n_boot,
                                            confidence=confidence)
        else:
            value = low = high = np.full(2, np.nan)
        for j, measure in enumerate(("kl", "emd")):
            rows.append([*key, measure, n, value[j], float(low[j]), float(high[j])])
    return pd.DataFrame(rows, columns=by + MEASURE_COLUMNS)


def _kl_emd(idx: np.ndarray, *, bins: tuple[np.ndarray, np.ndarray, int], values: tuple[np.ndarray, np.ndarray],
            pseudo_count: float) -> tuple[float, float]:
    """``(kl, emd)`` of the prompts ``idx`` of a cell: ``bins`` are the bin of each P(he) and P(she) and
    the number of bins, ``values`` the probabilities themselves."""
    bh, bs, k = bins
    h, s = values
    ch = np.bincount(bh[idx], minlength=k)
    cs = np.bincount(bs[idx], minlength=k)
    return (float(stats.entropy(_smoothed(ch, pseudo_count), _smoothed(cs, pseudo_count))),
            float(stats.wasserstein_distance(h[idx], s[idx])))


# --- means with bootstrap intervals -------------------------------------------------------

def _mean_table(table: pd.DataFrame, by: list[str], measures: dict[str, np.ndarray], *, n_boot: int,
                confidence: float, seed: int, where: str) -> pd.DataFrame:
    """Mean of each measure per cell, with the sample sd and a percentile bootstrap CI."""
    positions = pd.Series(np.arange(len(table)), index=table.index)
    rows = []
    for key, cell in _cells(table.assign(_row=positions.to_numpy()), by):
        idx = cell["_row"].to_numpy()
        n = len(idx)
        for measure, values in measures.items():
            x = np.sort(values[idx])  # a canonical order, so the estimate ignores row order too
            sd = float(np.std(x, ddof=1)) if n > 1 else np.nan
            value = low = high = np.nan
            if n:  # every measure draws the same rows: one generator per cell, fresh for each
                with np.errstate(invalid="ignore"):
                    value, low, high, _ = bootstrap(Means(x), rng=cell_rng(seed, where, *key), n_boot=n_boot,
                                                    confidence=confidence)
            rows.append([*key, measure, n, value, sd, float(low), float(high)])
    return pd.DataFrame(rows, columns=by + MEAN_COLUMNS)


def mean_table(table: pd.DataFrame, by: Sequence[str], values: dict[str, np.ndarray], *, n_boot: int = N_BOOT,
               confidence: float = CONFIDENCE, seed: int = 0, where: str = "mean_table") -> pd.DataFrame:
    """Mean of each named array of ``values`` (aligned with ``table``'s rows) per ``by`` cell, with
    the sd and a percentile bootstrap CI over rows; columns ``by..., measure, n, value, sd, ci_low, ci_high``."""
    require_columns(table, list(by), where, "measures")
    return _mean_table(table, list(by), values, n_boot=n_boot, confidence=confidence, seed=seed, where=where)


DIRECTION_COLUMNS = ["n", "mean_diff", "ci_low", "ci_high", "share_he", "p", "p_adj"]


def direction_table(probs: pd.DataFrame, *, by: Sequence[str] = (*BY, "perturbation"), n_boot: int = N_BOOT,
                    confidence: float = CONFIDENCE, seed: int = 0) -> pd.DataFrame:
    """Which way the pronouns lean: the signed mean of P(he) − P(she) per cell, with a test.

    Parameters
    ----------
    probs : pandas.DataFrame
        :func:`pronoun_measures`' output (``diff`` = P(he) − P(she)) with the ``by`` columns.
    by : sequence of str, default=("model", "prompt_set", "perturbation")
    n_boot, confidence, seed
        The percentile bootstrap CI of the mean, prompts resampled (as :func:`mean_table`).

    Returns
    -------
    pandas.DataFrame
        One row per cell: the ``by`` columns, then ``n`` (prompts), ``mean_diff`` (mean of
        P(he) − P(she): positive leans to *he*), ``ci_low, ci_high``, ``share_he`` (the share of
        prompts with P(he) > P(she)), ``p`` (two-sided Wilcoxon signed-rank test of the
        differences against 0; nan under 2 prompts or when every difference is 0) and ``p_adj``
        (Benjamini-Hochberg over the table's rows).

    Examples
    --------
    >>> probs = pd.DataFrame({"model": "m", "prompt_set": "s", "perturbation": "orig",
    ...                       "diff": [0.2, 0.1, 0.3, -0.05, 0.15, 0.25]})
    >>> row = direction_table(probs, n_boot=100).iloc[0]
    >>> [round(float(row[c]), 4) for c in ("mean_diff", "share_he", "p")]
    [0.1583, 0.8333, 0.0625]
    """
    by = list(by)
    require_columns(probs, [*by, "diff"], "direction_table", "measures")
    means = _mean_table(probs, by, {"mean_diff": probs["diff"].to_numpy(float)}, n_boot=n_boot,
                        confidence=confidence, seed=seed, where="direction_table")
    rows = []
    for (key, cell), mean in zip(_cells(probs, by), means.itertuples(index=False)):
        diff = cell["diff"].to_numpy(float)
        diff = diff[np.isfinite(diff)]
        p = float(stats.wilcoxon(diff).pvalue) if len(diff) > 1 and np.any(diff != 0) else np.nan
        share = float(np.mean(diff > 0)) if len(diff) else np.nan
        rows.append([*key, int(mean.n), mean.value, mean.ci_low, mean.ci_high, share, p])
    table = pd.DataFrame(rows, columns=by + DIRECTION_COLUMNS[:-1])
    table["p_adj"] = fdr_bh(table["p"].to_numpy(float)) if len(table) else []
    return table


def perturbation_table(probs: pd.DataFrame, *, by: Sequence[str] = BY, perturbation: str = "perturbation",
                       he: str = "he", she: str = "she", n_boot: int = N_BOOT, confidence: float = CONFIDENCE,
                       seed: int = 0) -> pd.DataFrame:
    """Mean stereotypical bias \\|P(he) − P(she)\\| for each perturbation of the prompts.

    Parameters
    ----------
    probs : pandas.DataFrame
        One row per prompt, e.g. ``continuation_probabilities`` of the output of
        ``nlgbias.probes.pronouns.perturbations``; needs ``he``, ``she``, ``perturbation``
        (``orig``, ``replace``, ``delete``) and every ``by`` column.
    by : sequence of str, default=("model", "prompt_set")
    perturbation : str, default="perturbation"
        The column naming each prompt's perturbation.
    n_boot, confidence, seed
        As in :func:`divergence_table`; prompts are resampled within each (cell, perturbation).

    Returns
    -------
    pandas.DataFrame
        One row per (cell, perturbation), in order of first appearance: the ``by`` columns,
        ``perturbation``, then ``measure`` (``"abs_diff"``), ``n, value, sd, ci_low, ci_high``.

    References
    ----------
    The natural-sentence prompts paper, Table 4.

    Examples
    --------
    >>> probs = pd.DataFrame({"perturbation": ["orig", "orig", "delete", "delete"],
    ...                       "he": [0.5, 0.3, 0.2, 0.2], "she": [0.1, 0.1, 0.1, 0.2]})
    >>> perturbation_table(probs, by=[], n_boot=100)[["perturbation", "n", "value"]].round(3).values.tolist()
    [['orig', 2, 0.3], ['delete', 2, 0.05]]
    """
    by = list(by) + [perturbation]
    require_columns(probs, by + [he, she], "perturbation_table", "probabilities")
    return _mean_table(probs, by, {"abs_diff": _abs_diff(probs, he, she)}, n_boot=n_boot, confidence=confidence,
                       seed=seed, where="perturbation_table")


def certainty_table(probs: pd.DataFrame, *, by: Sequence[str] = BY, n_boot: int = N_BOOT, confidence: float = CONFIDENCE,
                    seed: int = 0) -> pd.DataFrame:
    """The model's certainty: mean highest next-token probability and mean gap to the second.

    Parameters
    ----------
    probs : pandas.DataFrame
        One row per prompt with ``top1`` and ``gap`` (as made by ``continuation_probabilities``)
        and every ``by`` column.
    by : sequence of str, default=("model", "prompt_set")
    n_boot, confidence, seed
        As in :func:`divergence_table`.

    Returns
    -------
    pandas.DataFrame
        Two rows per cell, ``measure`` = ``"top1"`` (the paper's *Highest*) then ``"gap"``: the
        ``by`` columns, then ``measure, n, value, sd, ci_low, ci_high``.

    Notes
    -----
    ``sd`` is the standard deviation over prompts.  The paper's "± " for templates is the
    standard deviation over *templates* of the per-template means: take it from
    :func:`template_table` (``groupby(measure)["value"].std()``).

    References
    ----------
    The natural-sentence prompts paper, Table 6.

    Examples
    --------
    >>> probs = pd.DataFrame({"top1": [0.5, 0.3], "gap": [0.25, 0.05]})
    >>> certainty_table(probs, by=[], n_boot=100)[["measure", "n", "value"]].values.tolist()
    [['top1', 2, 0.4], ['gap', 2, 0.15]]
    """
    by = list(by)
    require_columns(probs, by + ["top1", "gap"], "certainty_table", "probabilities")
    measures = {"top1": probs["top1"].to_numpy(float), "gap": probs["gap"].to_numpy(float)}
    return _mean_table(probs, by, measures, n_boot=n_boot, confidence=confidence, seed=seed,
                       where="certainty_table")


def template_table(probs: pd.DataFrame, *, by: Sequence[str] = ("model",), template: str = "template_id",
                   he: str = "he", she: str = "she", n_boot: int = N_BOOT, confidence: float = CONFIDENCE,
                   seed: int = 0) -> pd.DataFrame:
    """Per template: mean \\|P(he) − P(she)\\|, mean P(he)/P(she) and mean highest probability.

    Parameters
    ----------
    probs : pandas.DataFrame
        One row per (template, profession) prompt; needs ``he``, ``she``, ``top1``, the
        ``template`` column and every ``by`` column.
    by : sequence of str, default=("model",)
    template : str, default="template_id"
        The column naming each prompt's template.
    n_boot, confidence, seed
        As in :func:`divergence_table`; prompts are resampled within each (cell, template).

    Returns
    -------
    pandas.DataFrame
        Three rows per (cell, template), ``measure`` = ``"abs_diff"``, ``"ratio"``, ``"top1"``:
        the ``by`` columns, ``template``, then ``measure, n, value, sd, ci_low, ci_high``.
        The mean ratio is ``inf`` if some P(she) is 0.

    References
    ----------
    The natural-sentence prompts paper, Table 8 (means over the professions of each template).

    Examples
    --------
    >>> probs = pd.DataFrame({"template_id": ["said_that"] * 2, "he": [0.2, 0.3], "she": [0.1, 0.1],
    ...                       "top1": [0.4, 0.2]})
    >>> template_table(probs, by=[], n_boot=50)[["measure", "value"]].round(3).values.tolist()
    [['abs_diff', 0.15], ['ratio', 2.5], ['top1', 0.3]]
    """
    by = list(by) + [template]
    require_columns(probs, by + [he, she, "top1"], "template_table", "probabilities")
    measures = {"abs_diff": _abs_diff(probs, he, she), "ratio": _ratio(probs, he, she),
                "top1": probs["top1"].to_numpy(float)}
    return _mean_table(probs, by, measures, n_boot=n_boot, confidence=confidence, seed=seed, where="template_table")


# --- validity -----------------------------------------------------------------------------

def _profession_key(name) -> str:
    """Lower case, underscores as spaces, single spaces: how profession names are matched."""
    return " ".join(str(name).replace("_", " ").lower().split())


def read_profession_scores(path: str | Path) -> pd.DataFrame:
    """Bolukbasi et al.'s ``professions.json`` as a table.

    Parameters
    ----------
    path : str or Path
        A JSON list of ``[word, definitional, stereotypical]`` (scores in [-1 female, +1 male]).

    Returns
    -------
    pandas.DataFrame
        Columns ``word`` (underscores turned into spaces), ``definitional``, ``stereotypical``.

    References
    ----------
    Bolukbasi et al. (2016), *Man is to computer programmer as woman is to homemaker?*
    """
    with open(path, encoding="utf-8") as handle:
        rows = json.load(handle)
    table = pd.DataFrame(rows, columns=["word", "definitional", "stereotypical"])
    table["word"] = table["word"].str.replace("_", " ", regex=False)
    return table


def score_correlation(probs: pd.DataFrame, scores: pd.DataFrame, *, score: str = "stereotypical",
                      word: str = "word", profession: str = "profession", by: Sequence[str] = BY,
                      he: str = "he", she: str = "she") -> pd.DataFrame:
    """Pearson and Spearman correlation of per-profession P(he) − P(she) with a score per profession.

    Parameters
    ----------
    probs : pandas.DataFrame
        One row per prompt; needs ``he``, ``she``, ``profession`` and every ``by`` column.
    scores : pandas.DataFrame
        One row per profession with a ``word`` column and a ``score`` column, e.g.
        :func:`read_profession_scores` (``stereotypical`` or ``definitional``).
    score, word, profession : str
        Column names.
    by : sequence of str, default=("model", "prompt_set")

    Returns
    -------
    pandas.DataFrame
        Two rows per cell (``method`` = ``"pearson"``, ``"spearman"``): the ``by`` columns, then
        ``score`` (the score column's name), ``method``, ``n`` (professions with a score),
        ``n_unmatched`` (professions of the cell without one), ``r`` and ``p`` (two-sided, from
        ``scipy.stats.pearsonr`` / ``spearmanr``).

    Notes
    -----
    P(he) − P(she) is first averaged over each profession's prompts within a cell (the
    templates of Vig et al. give one prompt per template and profession).  Names match after
    lower-casing, turning underscores into spaces and collapsing whitespace.  With fewer than
    3 matched professions, or a constant column, ``r`` and ``p`` are ``nan`` (with a warning).
    A positive r means that professions the score calls male get more "he" than "she".

    Examples
    --------
    >>> probs = pd.DataFrame({"profession": ["nurse", "carpenter", "fire fighter", "poet"],
    ...                       "he": [0.1, 0.5, 0.4, 0.2], "she": [0.4, 0.1, 0.1, 0.2]})
    >>> scores = pd.DataFrame({"word": ["nurse", "carpenter", "fire_fighter"], "stereotypical": [-0.9, 0.6, 0.8]})
    >>> out = score_correlation(probs, scores, by=[])
    >>> out[["method", "n", "n_unmatched"]].values.tolist(), round(float(out["r"].iloc[1]), 3)
    ([['pearson', 3, 1], ['spearman', 3, 1]], 0.5)
    """
    by = list(by)
    where = "score_correlation"
    require_columns(probs, by + [he, she, profession], where, "probabilities")
    require_columns(scores, [word, score], where, "scores")
    lookup = pd.Series(scores[score].to_numpy(float), index=[_profession_key(w) for w in scores[word]])
    lookup = lookup[~lookup.index.duplicated(keep="first")]
    rows = []
    for key, cell in _cells(probs, by):
        diff = pd.Series(cell[he].to_numpy(float) - cell[she].to_numpy(float),
                         index=[_profession_key(p) for p in cell[profession]])
        per_job = diff.groupby(level=0, sort=False).mean()
        matched = per_job.index.isin(lookup.index)
        x = per_job[matched].to_numpy()
        y = lookup.reindex(per_job.index[matched]).to_numpy()
        n, unmatched = len(x), int((~matched).sum())
        for method, fn in (("pearson", stats.pearsonr), ("spearman", stats.spearmanr)):
            if n < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
                warnings.warn(FEW_PROFESSIONS.format(where=where, n=n, cell=key), stacklevel=2)
                r = p = np.nan
            else:
                result = fn(x, y)
                r, p = float(result[0]), float(result[1])
            rows.append([*key, score, method, n, unmatched, r, p])
    return pd.DataFrame(rows, columns=by + CORRELATION_COLUMNS)


def share_correlation(probs: pd.DataFrame, shares: Mapping[str, float], *, name: str = "women_share",
                      profession: str = "profession", by: Sequence[str] = BY, he: str = "he",
                      she: str = "she") -> pd.DataFrame:
    """Correlation of per-profession P(he) − P(she) with the share of women in each profession (BLS).

    Parameters
    ----------
    probs : pandas.DataFrame
        As in :func:`score_correlation`.
    shares : mapping of str to float
        Profession (as in ``probs``) -> women's share of its workers, e.g. from the BLS Current
        Population Survey; matching titles to BLS occupations is the caller's job.
    name : str, default="women_share"
        What the ``score`` column of the result says.

    Returns
    -------
    pandas.DataFrame
        As :func:`score_correlation`, with ``score`` = ``name``.  A valid measure correlates
        *negatively* here: more women in a profession, less "he" than "she".

    Examples
    --------
    >>> probs = pd.DataFrame({"profession": ["nurse", "carpenter", "cashier"],
    ...                       "he": [0.1, 0.5, 0.2], "she": [0.4, 0.1, 0.2]})
    >>> out = share_correlation(probs, {"nurse": 0.87, "carpenter": 0.03, "cashier": 0.71}, by=[])
    >>> out[["score", "method", "n", "r"]].round(3).values.tolist()[1]
    ['women_share', 'spearman', 3, -1.0]
    """
    table = pd.DataFrame({"word": list(shares.keys()), name: [float(v) for v in shares.values()]})
    return score_correlation(probs, table, score=name, word="word", profession=profession, by=by, he=he, she=she)
