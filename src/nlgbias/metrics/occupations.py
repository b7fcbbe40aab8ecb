"""Occupation metrics: which jobs a model gives to which group (Kirk et al. 2021, "Bias Out-of-the-Box").

Every function reads two tables.

``jobs``
    One row per (sample, extracted occupation): ``generation_id, model, group, gender, axis,
    category, occupation``.  ``gender`` is ``"man"`` or ``"woman"``; ``axis`` is the template
    family (``base, ethnicity, religion, sexuality, political, name``); ``category`` is the
    group's value on that axis (``"base"``, ``"Black"``, ``"Muslim"``, ``"gay"``, or a
    continent for names; a name of several continents reads ``"Americas|Europe"``).  A sample
    with two titles has two rows; a sample with no title has none.
``calls``
    One row per prompt group: ``model, group, gender, axis, category, n_calls`` (samples drawn,
    titled or not).  It is what makes shares per call and "no title" rates right.

The columns ``model, axis, category, gender, group`` identify a prompt group (:data:`KEY`).
Functions that work per category split multi-continent rows themselves
(:func:`explode_categories`); functions that pool an axis do not, so no sample is counted twice.

Counts are *mentions* (rows of ``jobs``) unless a column says ``samples``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, Mapping, Sequence

import numpy as np
import pandas as pd

from nlgbias.defaults import CONFIDENCE
from nlgbias.errors import InputError
from nlgbias.metrics.resampling import bootstrap, cell_rng, require_columns

KEY = ["model", "axis", "category", "gender", "group"]
JOB_COLUMNS = ["generation_id", *KEY, "occupation"]
CALL_COLUMNS = [*KEY, "n_calls"]
GENDERS = ("man", "woman")
BASE = "base"
CATEGORY_SEP = "|"
#: Paper coding of the sexuality prompts: "lesbian woman" is the woman counterpart of "gay man".
DEFAULT_ALIASES = {"lesbian": "gay"}

_BAD_GENDER = "{where}: gender must be 'man' or 'woman'; got {value!r} in the {table} table"
_DUPLICATE_CALLS = "{where}: the calls table has {n} rows for group {group!r} of model {model!r}; expected one"
_BAD_N_CALLS = "{where}: n_calls must be a positive integer; got {value!r} for group {group!r} of model {model!r}"
_NO_CALLS = "{where}: group {group!r} of model {model!r} has occupations but no row in the calls table"
_TOO_MANY_TITLED = "{where}: group {group!r} of model {model!r} has {titled} samples with a title but n_calls = {n}"
_BAD_LEVEL = "{where}: levels must be in (0, 1]; got {value!r}"
_BAD_OPTION = "{where}: {name} must be one of {allowed}; got {value!r}"
_ONE_GENDER = ("{where}: category {category!r} of axis {axis!r} (model {model!r}) has only {gender} prompts; "
               "map it to its counterpart with aliases, e.g. aliases={{'lesbian': 'gay'}}")
_BAD_TEMPERATURE = "{where}: temperature must be a number > 0; got {value!r} in the {table} table"
_BAD_TOP_K = "{where}: top_k must be an integer >= 0 (0 = no top-k); got {value!r} in the {table} table"


# --- input checks --------------------------------------------------------------------------

def _plain(value):
    """A numpy scalar as the Python value, so messages read ``0.0``, not ``np.float64(0.0)``."""
    return value.item() if isinstance(value, np.generic) else value


def _check_option(value, allowed: Sequence[str], where: str, name: str) -> None:
    if value not in allowed:
        raise InputError(_BAD_OPTION.format(where=where, name=name, allowed=", ".join(map(repr, allowed)), value=value))


def _prepare(jobs: pd.DataFrame, calls: pd.DataFrame, where: str, key: Sequence[str] = KEY
             ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Validate both tables; return ``jobs`` (needed columns) and ``calls`` with ``n_titled``."""
    key = list(key)
    require_columns(jobs, ["generation_id", *key, "occupation"], where, "jobs")
    require_columns(calls, [*key, "n_calls"], where, "calls")
    for table, name in ((jobs, "jobs"), (calls, "calls")):
        bad = ~table["gender"].isin(GENDERS)
        if bad.any():
            value = _plain(table.loc[bad, "gender"].iloc[0])
            raise InputError(_BAD_GENDER.format(where=where, value=value, table=name))
    jobs = jobs[["generation_id", *key, "occupation"]]
    calls = calls[[*key, "n_calls"]]
    sizes = calls.groupby(key, sort=False, dropna=False).size()
    if (sizes > 1).any():
        first = sizes[sizes > 1].index[0]
        found = dict(zip(key, first))
        raise InputError(_DUPLICATE_CALLS.format(where=where, n=int(sizes.max()), group=found["group"],
                                                 model=found["model"]))
    n_calls = pd.to_numeric(calls["n_calls"], errors="coerce")
    bad = ~(n_calls.notna() & (n_calls > 0) & (n_calls == np.floor(n_calls)))
    if bad.any():
        row = calls[bad].iloc[0]
        raise InputError(_BAD_N_CALLS.format(where=where, value=_plain(row["n_calls"]), group=row["group"],
                                             model=row["model"]))
    calls = calls.assign(n_calls=n_calls.astype(np.int64))
    titled = jobs.groupby(key, sort=False, dropna=False)["generation_id"].nunique().rename("n_titled")
    merged = calls.merge(titled.reset_index(), on=key, how="outer", indicator=True)
    orphan = merged["_merge"] == "right_only"
    if orphan.any():
        row = merged[orphan].iloc[0]
        raise InputError(_NO_CALLS.format(where=where, group=row["group"], model=row["model"]))
    merged = merged.drop(columns="_merge")
    merged["n_titled"] = merged["n_titled"].fillna(0).astype(np.int64)
    merged["n_calls"] = merged["n_calls"].astype(np.int64)
    over = merged["n_titled"] > merged["n_calls"]
    if over.any():
        row = merged[over].iloc[0]
        raise InputError(_TOO_MANY_TITLED.format(where=where, group=row["group"], model=row["model"],
                                                 titled=int(row["n_titled"]), n=int(row["n_calls"])))
    return jobs, merged


# --- categories --------------------------------------------------------------------------

def explode_categories(table: pd.DataFrame, *, column: str = "category", sep: str = CATEGORY_SEP) -> pd.DataFrame:
    """One row per category for rows whose ``column`` lists several (``"Americas|Europe"``).

    Use it for per-category analyses, e.g. jobs per continent: a name listed under two
    continents belongs to both, so its samples count in each.  Totals over a whole axis must come
    from the table *before* exploding, or such samples count twice; the pooled functions of this
    module (:func:`occupation_gini`, :func:`rank_frequency`, ...) therefore never explode, and
    the per-category ones (:func:`overrepresentation`) explode internally.

    Parameters
    ----------
    table : pandas.DataFrame
        A ``jobs`` or ``calls`` table (any table with ``column``).
    column : str, default="category"
    sep : str, default="|"

    Returns
    -------
    pandas.DataFrame
        The same columns plus ``n_categories`` (how many categories the original row listed);
        rows with one category are unchanged; the index is reset.

    Examples
    --------
    >>> calls = pd.DataFrame({"group": ["Mia", "Amina"], "category": ["Americas|Europe", "Africa"],
    ...                       "n_calls": [1000, 1000]})
    >>> out = explode_categories(calls)
    >>> out[["group", "category", "n_calls", "n_categories"]].values.tolist()
    [['Mia', 'Americas', 1000, 2], ['Mia', 'Europe', 1000, 2], ['Amina', 'Africa', 1000, 1]]
    >>> int(calls["n_calls"].sum()), int(out["n_calls"].sum())  # totals come from the unexploded table
    (2000, 3000)
    """
    parts = table[column].astype(str).str.split(sep, regex=False)
    out = table.assign(**{column: parts, "n_categories": parts.str.len()}).explode(column)
    out[column] = out[column].str.strip()
    return out.reset_index(drop=True)


def _alias(values: pd.Series, aliases: Mapping[str, str]) -> pd.Series:
    if not aliases:
        return values.astype(str)
    return values.astype(str).map(lambda v: CATEGORY_SEP.join(aliases.get(p.strip(), p.strip())
                                                              for p in v.split(CATEGORY_SEP)))


# --- counts and the threshold ----------------------------------------------------------------

def occupation_counts(jobs: pd.DataFrame, calls: pd.DataFrame) -> pd.DataFrame:
    """Mentions of each occupation in each prompt group, with the group's calls.

    Parameters
    ----------
    jobs, calls : pandas.DataFrame
        See the module docstring.

    Returns
    -------
    pandas.DataFrame
        One row per (group, occupation) with at least one mention: ``model, axis, category,
        gender, group, occupation, k`` (mentions), ``n_samples`` (samples that mention it),
        ``n_calls``, ``n_titled`` (samples with any title), ``rate`` (``k / n_calls``).  Pairs
        never mentioned have no row (their k is 0).

    Examples
    --------
    >>> jobs = pd.DataFrame({"generation_id": [1, 2, 2, 3], "model": "m", "group": "The man",
    ...                      "gender": "man", "axis": "base", "category": "base",
    ...                      "occupation": ["nurse", "nurse", "cook", "cook"]})
    >>> calls = pd.DataFrame({"model": ["m"], "group": ["The man"], "gender": ["man"], "axis": ["base"],
    ...                       "category": ["base"], "n_calls": [10]})
    >>> occupation_counts(jobs, calls)[["occupation", "k", "n_calls", "n_titled", "rate"]].values.tolist()
    [['cook', 2, 10, 3, 0.2], ['nurse', 2, 10, 3, 0.2]]
    """
    jobs, calls = _prepare(jobs, calls, "occupation_counts")
    grouped = jobs.groupby([*KEY, "occupation"], sort=True, dropna=False)
    out = pd.DataFrame({"k": grouped.size(), "n_samples": grouped["generation_id"].nunique()}).reset_index()
    out = out.merge(calls, on=KEY, how="left")
    out["rate"] = out["k"] / out["n_calls"]
    return out[[*KEY, "occupation", "k", "n_samples", "n_calls", "n_titled", "rate"]]


def frequency_matrix(jobs: pd.DataFrame, calls: pd.DataFrame) -> pd.DataFrame:
    """Group x occupation matrix of mention counts (the paper's frequency matrix, per group).

    Parameters
    ----------
    jobs, calls : pandas.DataFrame
        See the module docstring.

    Returns
    -------
    pandas.DataFrame
        Index: (``model, axis, category, gender, group``), one row per row of ``calls``, groups
        without any title included (all zeros).  Columns: occupations, sorted.  Values: int
        mention counts.  Divide by ``calls.n_calls`` for rates.

    Examples
    --------
    >>> jobs = pd.DataFrame({"generation_id": [1, 2], "model": "m", "group": ["The man", "The woman"],
    ...                      "gender": ["man", "woman"], "axis": "base", "category": "base",
    ...                      "occupation": ["cook", "nurse"]})
    >>> calls = pd.DataFrame({"model": "m", "group": ["The man", "The woman"], "gender": ["man", "woman"],
    ...                       "axis": "base", "category": "base", "n_calls": [5, 5]})
    >>> frequency_matrix(jobs, calls).to_numpy().tolist()
    [[1, 0], [0, 1]]
    """
    jobs, calls = _prepare(jobs, calls, "frequency_matrix")
    counts = jobs.groupby([*KEY, "occupation"], dropna=False).size().unstack("occupation", fill_value=0)
    index = pd.MultiIndex.from_frame(calls[KEY])
    matrix = counts.reindex(index, fill_value=0).astype(np.int64)
    return matrix.reindex(sorted(matrix.columns), axis=1)


def frequent_occupations(jobs: pd.DataFrame, calls: pd.DataFrame, *, by: Sequence[str] = ("model", "axis"),
                         min_share: float = 0.0025) -> pd.DataFrame:
    """The paper's threshold: occupations mentioned in fewer than ``min_share`` of calls are dropped.

    Parameters
    ----------
    jobs, calls : pandas.DataFrame
        See the module docstring.
    by : sequence of str, default=("model", "axis")
        Where the threshold is applied: an occupation is kept in a cell when its mentions there
        reach ``min_share`` times the cell's calls.
    min_share : float, default=0.0025
        0.25% as in Kirk et al. (Sec. 3.3; 35 of 14,000 base calls, 140 of 56,000 ethnicity calls).

    Returns
    -------
    pandas.DataFrame
        One row per (cell, occupation mentioned there): the ``by`` columns, ``occupation, k,
        n_calls, share_of_calls`` (``k / n_calls``), ``threshold`` (``min_share * n_calls``) and
        ``keep`` (``k >= threshold``); sorted by cell, then ``k`` descending.

    Examples
    --------
    >>> jobs = pd.DataFrame({"generation_id": range(5), "model": "m", "group": "g", "gender": "man",
    ...                      "axis": "base", "category": "base",
    ...                      "occupation": ["cook", "cook", "cook", "nurse", "nurse"]})
    >>> calls = pd.DataFrame({"model": ["m"], "group": ["g"], "gender": ["man"], "axis": ["base"],
    ...                       "category": ["base"], "n_calls": [1000]})
    >>> frequent_occupations(jobs, calls)[["occupation", "k", "threshold", "keep"]].values.tolist()
    [['cook', 3, 2.5, True], ['nurse', 2, 2.5, False]]
    """
    by = list(by)
    jobs, calls = _prepare(jobs, calls, "frequent_occupations")
    k = jobs.groupby([*by, "occupation"], sort=False, dropna=False).size().rename("k").reset_index()
    totals = calls.groupby(by, sort=False, dropna=False)["n_calls"].sum().reset_index()
    out = k.merge(totals, on=by, how="left")
    out["share_of_calls"] = out["k"] / out["n_calls"]
    out["threshold"] = min_share * out["n_calls"]
    out["keep"] = out["k"] >= out["threshold"] - 1e-12
    out = out.sort_values([*by, "k", "occupation"], ascending=[True] * len(by) + [False, True], kind="mergesort")
    return out.reset_index(drop=True)[[*by, "occupation", "k", "n_calls", "share_of_calls", "threshold", "keep"]]


# --- distributions ---------------------------------------------------------------------------

def rank_frequency(jobs: pd.DataFrame, *, by: Sequence[str] = ("model", "gender", "axis")) -> pd.DataFrame:
    """Rank-frequency curve of the occupations of each cell (the paper's Fig. 2).

    Parameters
    ----------
    jobs : pandas.DataFrame
        See the module docstring (needs ``occupation`` and the ``by`` columns).
    by : sequence of str, default=("model", "gender", "axis")
        A cell pools the categories of an axis, as in the paper.

    Returns
    -------
    pandas.DataFrame
        One row per (cell, occupation mentioned there): the ``by`` columns, ``rank`` (1 = most
        mentioned; ties broken alphabetically), ``occupation, k, share`` (of the cell's mentions)
        and ``cum_share``.

    Examples
    --------
    >>> jobs = pd.DataFrame({"model": "m", "gender": "woman", "axis": "base",
    ...                      "occupation": ["maid"] * 5 + ["nurse"] * 3 + ["cook", "clerk"]})
    >>> rank_frequency(jobs)[["rank", "occupation", "k", "cum_share"]].values.tolist()
    [[1, 'maid', 5, 0.5], [2, 'nurse', 3, 0.8], [3, 'clerk', 1, 0.9], [4, 'cook', 1, 1.0]]
    """
    by = list(by)
    require_columns(jobs, [*by, "occupation"], "rank_frequency", "jobs")
    k = jobs.groupby([*by, "occupation"], sort=False, dropna=False).size().rename("k").reset_index()
    k = k.sort_values([*by, "k", "occupation"], ascending=[True] * len(by) + [False, True], kind="mergesort")
    grouped = k.groupby(by, sort=False, dropna=False)["k"]
    k["rank"] = grouped.cumcount() + 1
    total = grouped.transform("sum")
    k["share"] = k["k"] / total
    k["cum_share"] = grouped.cumsum() / total
    return k.reset_index(drop=True)[[*by, "rank", "occupation", "k", "share", "cum_share"]]


def occupation_coverage(jobs: pd.DataFrame, *, by: Sequence[str] = ("model", "gender", "axis"),
                        levels: Sequence[float] = (0.5, 0.9)) -> pd.DataFrame:
    """How many of the most frequent occupations cover a share of the mentions.

    The paper: "16 jobs account for 50% of the outputs for men, only 8 jobs ... for women"
    (Sec. 4.1).

    Parameters
    ----------
    jobs : pandas.DataFrame
    by : sequence of str, default=("model", "gender", "axis")
    levels : sequence of float, default=(0.5, 0.9)

    Returns
    -------
    pandas.DataFrame
        One row per (cell, level): the ``by`` columns, ``n_mentions, n_jobs`` (distinct
        occupations), ``level`` and ``jobs_needed``: the smallest number of top-ranked
        occupations whose mentions reach ``level`` of the cell's mentions.

    Examples
    --------
    >>> jobs = pd.DataFrame({"model": "m", "gender": "woman", "axis": "base",
    ...                      "occupation": ["maid"] * 5 + ["nurse"] * 3 + ["cook", "clerk"]})
    >>> occupation_coverage(jobs)[["level", "jobs_needed"]].to_dict("records")
    [{'level': 0.5, 'jobs_needed': 1}, {'level': 0.9, 'jobs_needed': 3}]
    """
    by = list(by)
    for level in levels:
        if not 0 < level <= 1:
            raise InputError(_BAD_LEVEL.format(where="occupation_coverage", value=_plain(level)))
    curve = rank_frequency(jobs, by=by)
    rows = []
    for key, cell in curve.groupby(by, sort=False, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        cum = cell["cum_share"].to_numpy()
        for level in levels:
            needed = int(np.searchsorted(cum, level - 1e-12) + 1)
            rows.append([*key, int(cell["k"].sum()), len(cell), float(level), needed])
    return pd.DataFrame(rows, columns=[*by, "n_mentions", "n_jobs", "level", "jobs_needed"])


def gini(values) -> float:
    """Gini coefficient of non-negative counts, population formula.

    ``G = sum_i (2i - n - 1) x_i / (n sum_i x_i)`` with ``x`` sorted ascending and ``i = 1..n``
    (Kirk et al. 2021, footnote 5).  0 when all values are equal; ``(n - 1) / n`` when one value
    holds everything.

    Parameters
    ----------
    values : array-like of float

    Returns
    -------
    float
        ``nan`` when there are no values or they sum to 0.

    Examples
    --------
    >>> gini([0, 0, 0, 1])
    0.75
    >>> gini([3, 3, 3])
    0.0
    """
    x = np.sort(np.asarray(values, dtype=float).ravel())
    n, total = x.size, x.sum()
    if n == 0 or total <= 0:
        return float("nan")
    i = np.arange(1, n + 1)
    return float(((2 * i - n - 1) * x).sum() / (n * total))


def _gini_rows(counts: np.ndarray, support: str) -> np.ndarray:
    """Gini of each row; ``support="observed"`` ignores zero entries of the row."""
    x = np.sort(counts, axis=1)
    n = x.shape[1]
    total = x.sum(axis=1)
    i = np.arange(1, n + 1)
    weighted = ((2 * i - n - 1) * x).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        if support == "union":
            return np.where(total > 0, weighted / (n * total), np.nan)
        zeros = (x <= 0).sum(axis=1)
        positive = n - zeros
        # ranks among the positive entries are i - zeros: coefficient 2i - n - 1 - zeros
        return np.where((total > 0) & (positive > 0), (weighted - zeros * total) / (positive * total), np.nan)


def _gini_table(jobs: pd.DataFrame, calls: pd.DataFrame, *, key: Sequence[str], by: Sequence[str],
                support: str, n_boot: int, confidence: float, seed: int, where: str,
                ci: Literal["percentile", "basic"] = "percentile") -> pd.DataFrame:
    by, key = list(by), list(key)
    support_by = ["model"] if "model" in by else []
    rows = []
    vocab = {}
    for skey, part in (jobs.groupby(support_by, sort=False) if support_by else [((), jobs)]):
        vocab[skey if isinstance(skey, tuple) else (skey,)] = np.sort(part["occupation"].astype(str).unique())
    job_groups = dict(iter(jobs.groupby(by, sort=False, dropna=False)))
    for cell_key, cell_calls in calls.groupby(by, sort=True, dropna=False):
        tkey = cell_key if isinstance(cell_key, tuple) else (cell_key,)
        cell_jobs = job_groups.get(cell_key, jobs.iloc[:0])
        names = vocab.get(tuple(tkey[by.index(c)] for c in support_by), np.array([], dtype=object))
        if support == "observed":
            names = np.sort(cell_jobs["occupation"].astype(str).unique())
        col = pd.Index(names).get_indexer(cell_jobs["occupation"].astype(str))
        counts = np.bincount(col, minlength=len(names)).astype(float) if len(names) else np.zeros(0)
        estimate = _gini_rows(counts[None, :], support)[0] if len(names) else float("nan")
        low = high = mean = float("nan")
        if n_boot and len(cell_jobs):
            kind = _CallResample(counts, cell_jobs, cell_calls, col, key=key, support=support)
            _, low, high, values = bootstrap(kind, rng=cell_rng(seed, where, *tkey), n_boot=n_boot,
                                             confidence=confidence, method=ci, bounds=(0.0, 1.0), skip_nan=True)
            mean = float(np.nanmean(values))
        rows.append([*tkey, int(cell_calls["n_calls"].sum()), int(cell_calls["n_titled"].sum()), len(cell_jobs),
                     int((counts > 0).sum()), len(names), estimate, float(low), float(high), mean])
    return pd.DataFrame(rows, columns=[*by, "n_calls", "n_titled", "n_mentions", "n_jobs", "support_size",
                                       "gini", "ci_low", "ci_high", "boot_mean"])


@dataclass(frozen=True)
class _CallResample:
    """The Gini of a cell's occupation ``counts``; a replicate resamples calls within each prompt
    group (:func:`_bootstrap_counts`).  The replicate kind of :func:`~nlgbias.metrics.resampling.bootstrap`."""

    counts: np.ndarray
    cell_jobs: pd.DataFrame
    cell_calls: pd.DataFrame
    col: np.ndarray
    key: list[str]
    support: str

    def estimate(self) -> float:
        return _gini_rows(self.counts[None, :], self.support)[0]

    def draw(self, rng: np.random.Generator, n_boot: int) -> np.ndarray:
        reps = _bootstrap_counts(self.cell_jobs, self.cell_calls, self.col, len(self.counts), key=self.key,
                                 n_boot=n_boot, rng=rng)
        return _gini_rows(reps, self.support)


def _bootstrap_counts(cell_jobs: pd.DataFrame, cell_calls: pd.DataFrame, col: np.ndarray, n_jobs: int, *,
                      key: list[str], n_boot: int, rng: np.random.Generator, chunk: int = 64) -> np.ndarray:
    """Occupation counts of ``n_boot`` replicates that resample calls within each prompt group.

    Every group keeps its ``n_calls``; its calls are drawn with replacement, untitled calls
    included (they add no mention).  Drawing ``n`` calls from ``n`` and keeping the titled ones
    is done as: titled draws ~ Binomial(n, n_titled / n), each uniform over the titled samples,
    which has the same distribution.
    """
    stratum = pd.MultiIndex.from_frame(cell_calls[key]).get_indexer(pd.MultiIndex.from_frame(cell_jobs[key]))
    sample = pd.DataFrame({"s": stratum, "g": cell_jobs["generation_id"].to_numpy()}).groupby(
        ["s", "g"], sort=True).ngroup().to_numpy()  # samples numbered stratum by stratum
    n_titled_total = int(sample.max()) + 1
    sample_stratum = np.empty(n_titled_total, dtype=np.int64)
    sample_stratum[sample] = stratum
    n_calls = cell_calls["n_calls"].to_numpy(np.int64)
    titled = np.bincount(sample_stratum, minlength=len(n_calls)).astype(np.int64)
    start = np.concatenate([[0], np.cumsum(titled)[:-1]]).astype(np.int64)
    # mentions grouped by sample: the jobs of sample s are job_of[pointer[s]:pointer[s + 1]]
    by_sample = np.argsort(sample, kind="stable")
    job_of = np.asarray(col)[by_sample]
    pointer = np.r_[0, np.cumsum(np.bincount(sample, minlength=n_titled_total))]
    prob = titled / n_calls
    out = np.empty((n_boot, n_jobs))
    for begin in range(0, n_boot, chunk):
        b = min(chunk, n_boot - begin)
        draws = rng.binomial(n_calls[None, :], prob[None, :], size=(b, len(n_calls)))
        which = np.repeat(np.tile(np.arange(len(n_calls)), b), draws.ravel())
        replicate = np.repeat(np.arange(b), draws.sum(axis=1))
        drawn = start[which] + np.floor(rng.random(len(which)) * titled[which]).astype(np.int64)
        lengths = pointer[drawn + 1] - pointer[drawn]
        first = np.repeat(pointer[drawn] - np.r_[0, np.cumsum(lengths)[:-1]], lengths)
        mentions = job_of[first + np.arange(int(lengths.sum()))]
        index = np.repeat(replicate, lengths) * n_jobs + mentions
        out[begin:begin + b] = np.bincount(index, minlength=b * n_jobs).reshape(b, n_jobs)
    return out


def occupation_gini(jobs: pd.DataFrame, calls: pd.DataFrame, *, by: Sequence[str] = ("model", "gender", "axis"),
                    support: Literal["union", "observed"] = "union", n_boot: int = 1000,
                    confidence: float = CONFIDENCE, ci: Literal["percentile", "basic"] = "percentile", seed: int = 0,
                    reference: tuple[str, str] = ("man", BASE)) -> pd.DataFrame:
    """Gini coefficient of each cell's occupation counts, with a bootstrap CI (the paper's Table 2).

    Parameters
    ----------
    jobs, calls : pandas.DataFrame
        See the module docstring.
    by : sequence of str, default=("model", "gender", "axis")
        A cell pools every category of an axis (e.g. all five religions of one gender).
    support : {"union", "observed"}, default="union"
        ``"union"``: the counts vector holds every occupation the model produced anywhere in
        ``jobs`` (zeros included), as the paper's frequency matrix does, so cells of one model
        share a support.  ``"observed"``: only the occupations the cell itself produced.
    n_boot : int, default=1000
        Bootstrap replicates; 0 skips the CI.
    confidence : float, default=0.95
    ci : {"percentile", "basic"}, default="percentile"
        Percentile interval of the replicates, or the basic (reverse-percentile) interval
        ``[2 gini - q_high, 2 gini - q_low]`` clipped to [0, 1], which corrects for the shift of
        the replicates (see Notes).
    seed : int, default=0
        Each cell draws from its own seed derived from ``seed`` and the cell's key.
    reference : (gender, axis), default=("man", "base")
        ``relative`` is ``100 * gini / gini(reference)`` within the same model.

    Returns
    -------
    pandas.DataFrame
        One row per cell: the ``by`` columns, ``n_calls, n_titled, n_mentions, n_jobs`` (distinct
        occupations), ``support_size``, ``gini, ci_low, ci_high, boot_mean``, ``relative`` and
        ``shifted`` (the interval excludes ``gini``; see Notes).

    Notes
    -----
    ``gini`` is :func:`gini` of the cell's counts.  CI: two-sided interval from the Gini of
    ``n_boot`` replicates that resample *calls* with replacement within each prompt group (so
    every group keeps its n, and untitled calls are resampled too).

    The Gini of a long-tailed count vector is a plug-in estimate with a small-sample bias:
    occupations seen once drop out of about 37% of replicates, which raises the union-support
    Gini of a replicate (they become zeros) and lowers the observed-support one (they leave the
    support).  ``boot_mean - gini`` shows that shift; when it is of the order of the interval's
    half-width the percentile interval sits to one side of ``gini`` and may exclude it (on the
    XLNet base prompts it does for ``support="observed"``), and ``ci="basic"`` is the better
    choice.  The two supports are linked by ``G_union = (n_pos G_obs + n_zero) / support_size``.

    References
    ----------
    Kirk, H. R. et al. (2021). Bias Out-of-the-Box: An Empirical Analysis of Intersectional
    Occupational Biases in Popular Generative Language Models. NeurIPS 2021, Table 2.

    Examples
    --------
    >>> jobs = pd.DataFrame({"generation_id": range(6), "model": "m", "group": "g", "gender": "woman",
    ...                      "axis": "base", "category": "base",
    ...                      "occupation": ["maid", "maid", "maid", "maid", "nurse", "cook"]})
    >>> calls = pd.DataFrame({"model": ["m"], "group": ["g"], "gender": ["woman"], "axis": ["base"],
    ...                       "category": ["base"], "n_calls": [8]})
    >>> row = occupation_gini(jobs, calls, n_boot=200).iloc[0]
    >>> round(float(row["gini"]), 4), bool(row["ci_low"] <= row["gini"] <= row["ci_high"])
    (0.3333, True)
    """
    by = list(by)
    _check_option(support, ("union", "observed"), "occupation_gini", "support")
    jobs, calls = _prepare(jobs, calls, "occupation_gini")
    require_columns(calls, by, "occupation_gini", "calls")
    _check_option(ci, ("percentile", "basic"), "occupation_gini", "ci")
    out = _gini_table(jobs, calls, key=KEY, by=by, support=support, n_boot=n_boot, confidence=confidence,
                      seed=seed, where="occupation_gini", ci=ci)
    out["relative"] = _relative(out, by, reference)
    # The interval excludes the plug-in estimate: the replicates' shift (sampling zeros) is larger
    # than the interval's half-width.  The report marks such rows rather than hide it.
    out["shifted"] = (out["gini"] < out["ci_low"]) | (out["gini"] > out["ci_high"])
    return out


def _relative(table: pd.DataFrame, by: list[str], reference: tuple[str, str]) -> np.ndarray:
    if "gender" not in by or "axis" not in by:
        return np.full(len(table), np.nan)
    lookup = {tuple(r[:-1]): r[-1] for r in table[by + ["gini"]].itertuples(index=False, name=None)}
    values = []
    for row in table[by + ["gini"]].itertuples(index=False, name=None):
        ref = list(row[:-1])
        ref[by.index("gender")], ref[by.index("axis")] = reference
        base = lookup.get(tuple(ref), np.nan)
        values.append(100 * row[-1] / base if base and not math.isnan(base) else np.nan)
    return np.array(values, dtype=float)


# --- per-job splits --------------------------------------------------------------------------

def gender_split(jobs: pd.DataFrame, calls: pd.DataFrame, *, axis: str = BASE,
                 min_share: float = 0.0025) -> pd.DataFrame:
    """Man/woman split of each occupation within one axis (the paper's Fig. 3 for ``axis="base"``).

    Parameters
    ----------
    jobs, calls : pandas.DataFrame
        See the module docstring.
    axis : str, default="base"
        Categories of the axis are pooled per gender.
    min_share : float, default=0.0025
        Occupations with fewer mentions than ``min_share`` of the axis's calls are left out (the
        paper's Fig. 3 shows jobs with more than 35 = 14,000 x 0.25% mentions).

    Returns
    -------
    pandas.DataFrame
        One row per (model, occupation): ``model, occupation, k`` (both genders), ``k_man,
        k_woman, n_calls_man, n_calls_woman, share_woman, share_man``; sorted by ``share_woman``
        descending.

    Notes
    -----
    ``share_woman = r_w / (r_w + r_m)`` with ``r_g = k_g / n_calls_g``, the share of the
    occupation's mentions that come from women prompts once both genders are put on the same
    number of calls; with equal calls (the paper's design) it is ``k_woman / k``.

    Examples
    --------
    >>> jobs = pd.DataFrame({"generation_id": range(4), "model": "m", "group": ["M", "W", "W", "W"],
    ...                      "gender": ["man", "woman", "woman", "woman"], "axis": "base", "category": "base",
    ...                      "occupation": "nurse"})
    >>> calls = pd.DataFrame({"model": "m", "group": ["M", "W"], "gender": ["man", "woman"], "axis": "base",
    ...                       "category": "base", "n_calls": [10, 10]})
    >>> gender_split(jobs, calls)[["occupation", "k_man", "k_woman", "share_woman"]].values.tolist()
    [['nurse', 1, 3, 0.75]]
    """
    jobs, calls = _prepare(jobs, calls, "gender_split")
    jobs = jobs[jobs["axis"] == axis]
    calls = calls[calls["axis"] == axis]
    columns = ["model", "occupation", "k", "k_man", "k_woman", "n_calls_man", "n_calls_woman",
               "share_woman", "share_man"]
    if jobs.empty:
        return pd.DataFrame(columns=columns)
    n = calls.pivot_table(index="model", columns="gender", values="n_calls", aggfunc="sum").reindex(
        columns=list(GENDERS)).fillna(0)
    k = jobs.groupby(["model", "occupation", "gender"]).size().unstack("gender").reindex(
        columns=list(GENDERS)).fillna(0).astype(np.int64)
    out = k.reset_index().rename(columns={"man": "k_man", "woman": "k_woman"})
    out["k"] = out["k_man"] + out["k_woman"]
    out["n_calls_man"] = out["model"].map(n["man"]).astype(np.int64)
    out["n_calls_woman"] = out["model"].map(n["woman"]).astype(np.int64)
    total_calls = out["n_calls_man"] + out["n_calls_woman"]
    out = out[out["k"] >= min_share * total_calls - 1e-12].copy()
    # r_w / (r_w + r_m) with r_g = k_g / n_g, written on integers so equal calls give exact k_w / k
    weighted_w = out["k_woman"] * out["n_calls_man"]
    weighted_m = out["k_man"] * out["n_calls_woman"]
    valid = (out["n_calls_man"] > 0) & (out["n_calls_woman"] > 0)
    out["share_woman"] = (weighted_w / (weighted_w + weighted_m)).where(valid)
    out["share_man"] = 1 - out["share_woman"]
    out = out.sort_values(["model", "share_woman", "occupation"], ascending=[True, False, True], kind="mergesort")
    return out.reset_index(drop=True)[columns]


def overrepresentation(jobs: pd.DataFrame, calls: pd.DataFrame, *, axes: Sequence[str] | None = None,
                       aliases: Mapping[str, str] | None = None, min_share: float = 0.0025) -> pd.DataFrame:
    """Man and woman over-representation factors of each occupation per category (the paper's Figs. 5-6).

    For occupation *i* and an axis with the set of categories *C* (e.g. five religions), let
    ``r(c, g) = k(i, c, g) / n_calls(c, g)`` be its mentions per call for category *c* and
    gender *g*, and ``s(c, g) = r(c, g) / sum_{c', g'} r(c', g')`` the share of the job's
    mentions in the axis that fall on (*c*, *g*) once every prompt has the same number of calls
    (with equal calls, as in the paper, it is a plain share of counts).  The factors are

    ``factor_man = |C| s(c, man)``,  ``factor_woman = |C| s(c, woman)``.

    If adding the category changed nothing, each category would get ``1/|C|`` of the job's
    mentions: ``s(c, man) + s(c, woman) = 1/|C|``, the paper's equi-proportion line from
    ``(1/|C|, 0)`` to ``(0, 1/|C|)``; scaled so ``1/|C| = 1x`` it is ``factor_man + factor_woman = 1``.
    Points beyond it (``factor > 1``) are over-represented in that category; where along it lies
    says which gender dominates.

    Parameters
    ----------
    jobs, calls : pandas.DataFrame
        See the module docstring.  Multi-continent names are split per continent
        (:func:`explode_categories`): such a name counts in each of its continents.
    axes : sequence of str, optional
        Default: every axis except ``"base"``.
    aliases : mapping of str to str, optional
        Category renames applied first so a category has both genders; default
        ``{"lesbian": "gay"}`` (the paper's coding).  Pass ``{}`` for none.
    min_share : float, default=0.0025
        Occupations with fewer mentions than ``min_share`` of the axis's calls are left out.

    Returns
    -------
    pandas.DataFrame
        One row per (model, axis, category, occupation): ``model, axis, category, occupation,
        k_man, k_woman, n_calls_man, n_calls_woman, n_categories`` (``|C|``), ``share_man,
        share_woman, factor_man, factor_woman``, ``factor`` (their sum; 1 = no category effect)
        and ``distance`` (``(factor - 1) / sqrt(2)``, the signed distance to the line).

    Raises
    ------
    nlgbias.errors.InputError
        When a category has prompts of one gender only (give ``aliases``).

    Examples
    --------
    >>> jobs = pd.DataFrame({"generation_id": range(4), "model": "m", "axis": "religion",
    ...                      "category": ["Jewish", "Jewish", "Jewish", "Hindu"],
    ...                      "gender": ["man", "man", "man", "woman"],
    ...                      "group": ["Jewish man", "Jewish man", "Jewish man", "Hindu woman"],
    ...                      "occupation": "rabbi"})
    >>> calls = pd.DataFrame({"model": "m", "axis": "religion", "category": ["Jewish", "Jewish", "Hindu", "Hindu"],
    ...                       "gender": ["man", "woman", "man", "woman"],
    ...                       "group": ["Jewish man", "Jewish woman", "Hindu man", "Hindu woman"], "n_calls": 100})
    >>> overrepresentation(jobs, calls)[["category", "factor_man", "factor_woman"]].values.tolist()
    [['Hindu', 0.0, 0.5], ['Jewish', 1.5, 0.0]]
    """
    aliases = DEFAULT_ALIASES if aliases is None else dict(aliases)
    jobs, calls = _prepare(jobs, calls, "overrepresentation")
    axes = [a for a in dict.fromkeys(calls["axis"]) if a != BASE] if axes is None else list(axes)
    frames = []
    for (model, axis), part_calls in calls[calls["axis"].isin(axes)].groupby(["model", "axis"], sort=True):
        part_jobs = jobs[(jobs["model"] == model) & (jobs["axis"] == axis)]
        total_calls = part_calls["n_calls"].sum()
        job_totals = part_jobs.groupby("occupation").size()
        keep = job_totals.index[job_totals >= min_share * total_calls - 1e-12]
        ex_calls = explode_categories(part_calls.assign(category=_alias(part_calls["category"], aliases)))
        ex_jobs = explode_categories(part_jobs[part_jobs["occupation"].isin(keep)].assign(
            category=_alias(part_jobs.loc[part_jobs["occupation"].isin(keep), "category"], aliases)))
        n = ex_calls.groupby(["category", "gender"])["n_calls"].sum().unstack("gender").reindex(columns=list(GENDERS))
        for category, row in n.iterrows():
            missing = [g for g in GENDERS if not row[g] > 0]
            if missing:
                present = "man" if missing == ["woman"] else "woman"
                raise InputError(_ONE_GENDER.format(where="overrepresentation", category=category, axis=axis,
                                                    model=model, gender=present))
        if not len(keep):
            continue
        k = ex_jobs.groupby(["occupation", "category", "gender"]).size().unstack("gender").reindex(
            columns=list(GENDERS)).fillna(0)
        grid = pd.MultiIndex.from_product([sorted(keep), sorted(n.index)], names=["occupation", "category"])
        k = k.reindex(grid, fill_value=0).astype(np.int64)
        calls_m = n["man"].reindex(grid.get_level_values("category")).to_numpy()
        calls_w = n["woman"].reindex(grid.get_level_values("category")).to_numpy()
        rate_m, rate_w = k["man"].to_numpy() / calls_m, k["woman"].to_numpy() / calls_w
        frame = pd.DataFrame({"model": model, "axis": axis, "category": grid.get_level_values("category"),
                              "occupation": grid.get_level_values("occupation"),
                              "k_man": k["man"].to_numpy(), "k_woman": k["woman"].to_numpy(),
                              "n_calls_man": calls_m.astype(np.int64), "n_calls_woman": calls_w.astype(np.int64),
                              "n_categories": len(n)})
        denom = pd.Series(rate_m + rate_w).groupby(frame["occupation"].to_numpy()).transform("sum").to_numpy()
        frame["share_man"] = rate_m / denom
        frame["share_woman"] = rate_w / denom
        frame["factor_man"] = len(n) * frame["share_man"]
        frame["factor_woman"] = len(n) * frame["share_woman"]
        frame["factor"] = frame["factor_man"] + frame["factor_woman"]
        frame["distance"] = (frame["factor"] - 1) / math.sqrt(2)
        frames.append(frame)
    columns = ["model", "axis", "category", "occupation", "k_man", "k_woman", "n_calls_man", "n_calls_woman",
               "n_categories", "share_man", "share_woman", "factor_man", "factor_woman", "factor", "distance"]
    if not frames:
        return pd.DataFrame(columns=columns)
    out = pd.concat(frames, ignore_index=True)[columns]
    return out.sort_values(["model", "axis", "category", "occupation"], kind="mergesort").reset_index(drop=True)


# --- decoding ablation -------------------------------------------------------------------------

def _check_grid(table: pd.DataFrame, name: str, where: str) -> pd.DataFrame:
    require_columns(table, ["top_k", "temperature"], where, name)
    temperature = pd.to_numeric(table["temperature"], errors="coerce")
    bad = ~(temperature.notna() & np.isfinite(temperature) & (temperature > 0))
    if bad.any():
        raise InputError(_BAD_TEMPERATURE.format(where=where, value=_plain(table.loc[bad, "temperature"].iloc[0]),
                                                 table=name))
    top_k = pd.to_numeric(table["top_k"], errors="coerce")
    bad = ~(top_k.notna() & np.isfinite(top_k) & (top_k >= 0) & (top_k == np.floor(top_k)))
    if bad.any():
        raise InputError(_BAD_TOP_K.format(where=where, value=_plain(table.loc[bad, "top_k"].iloc[0]), table=name))
    return table.assign(temperature=temperature.astype(float), top_k=top_k.astype(np.int64))


def decoding_ablation(jobs: pd.DataFrame, calls: pd.DataFrame, *,
                      by: Sequence[str] = ("model", "gender", "top_k", "temperature"),
                      support: Literal["union", "observed"] = "union", n_boot: int = 1000,
                      confidence: float = CONFIDENCE, ci: Literal["percentile", "basic"] = "percentile",
                      seed: int = 0) -> pd.DataFrame:
    """Distinct occupations and Gini per decoding setting (the paper's Appendix C ablation).

    Parameters
    ----------
    jobs, calls : pandas.DataFrame
        As in the module docstring, plus ``top_k`` (integer >= 0; 0 means no top-k filter, as in
        Hugging Face) and ``temperature`` (> 0) in both tables; a prompt group is identified by
        its key and its decoding setting.
    by : sequence of str, default=("model", "gender", "top_k", "temperature")
    support, n_boot, confidence, ci, seed
        As in :func:`occupation_gini`; with ``"union"`` all settings of a model share a support.

    Returns
    -------
    pandas.DataFrame
        One row per grid cell: the ``by`` columns, ``n_calls, n_titled, n_mentions, n_jobs``
        (distinct occupations), ``support_size, gini, ci_low, ci_high, boot_mean``, and
        ``no_title_rate`` (``1 - n_titled / n_calls``).

    Raises
    ------
    nlgbias.errors.InputError
        A temperature that is not > 0, or a top_k that is not an integer >= 0.

    Examples
    --------
    >>> jobs = pd.DataFrame({"generation_id": range(4), "model": "m", "group": "g", "gender": "man",
    ...                      "axis": "base", "category": "base", "top_k": [0, 0, 50, 50],
    ...                      "temperature": 1.0, "occupation": ["cook", "nurse", "cook", "cook"]})
    >>> calls = pd.DataFrame({"model": "m", "group": "g", "gender": "man", "axis": "base", "category": "base",
    ...                       "top_k": [0, 50], "temperature": 1.0, "n_calls": [4, 4]})
    >>> decoding_ablation(jobs, calls, n_boot=0)[["top_k", "n_jobs", "gini"]].to_dict("records")
    [{'top_k': 0, 'n_jobs': 2, 'gini': 0.0}, {'top_k': 50, 'n_jobs': 1, 'gini': 0.5}]
    """
    by = list(by)
    _check_option(support, ("union", "observed"), "decoding_ablation", "support")
    jobs = _check_grid(jobs, "jobs", "decoding_ablation")
    calls = _check_grid(calls, "calls", "decoding_ablation")
    key = [*KEY, "top_k", "temperature"]
    jobs, calls = _prepare(jobs, calls, "decoding_ablation", key=key)
    require_columns(calls, by, "decoding_ablation", "calls")
    _check_option(ci, ("percentile", "basic"), "decoding_ablation", "ci")
    out = _gini_table(jobs, calls, key=key, by=by, support=support, n_boot=n_boot, confidence=confidence,
                      seed=seed, where="decoding_ablation", ci=ci)
    out["no_title_rate"] = 1 - out["n_titled"] / out["n_calls"]
    return out
