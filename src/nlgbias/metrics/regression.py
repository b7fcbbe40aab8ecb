"""Logistic regressions of occupation on category and gender (Kirk et al. 2021, Sec. 3.3 and Table 3).

For every axis (ethnicity, religion, ...) and every occupation above the threshold, three
nested logits of "the sample mentions this occupation" are fitted on the base prompts plus the
axis's prompts, with base man as the reference:

(a) ``Intercept + categories``
(b) ``(a) + woman``
(c) ``(b) + woman:category``  (saturated: one parameter per gender x category cell)

Fitting on aggregated counts
----------------------------
The covariates are dummies of the prompt, so every sample of one prompt cell shares one
covariate row.  The Bernoulli log-likelihood of the row-level data,
``sum_rows y log p + (1 - y) log(1 - p)``, therefore equals
``sum_cells k log p_c + (n - k) log(1 - p_c)`` where a cell has ``n`` samples of which ``k``
mention the occupation.  We fit a binomial GLM (logit link) to two rows per cell, ``y = 1``
with frequency weight ``k`` and ``y = 0`` with weight ``n - k``: its likelihood, score and
Hessian are those of ``statsmodels.Logit`` on the expanded rows, so parameters, standard
errors, z-tests, ``llf``, ``llnull`` and McFadden's ``prsquared = 1 - llf / llnull`` are the
same (``tests/test_occupation_metrics.py`` checks this against ``Logit`` on the rows).  About
a dozen rows replace up to 80,000 one-hot rows per fit.

Failed fits are flagged, never reported as numbers
---------------------------------------------------
Each fit gets a ``status``: ``ok``; ``separation`` (a linear programme finds quasi- or
complete separation, so some coefficient's MLE is infinite, e.g. an occupation never given to
one cell; checked before fitting); ``rank_deficient`` (the design has fewer independent cells
than parameters); ``not_converged``; ``singular`` (the Fisher information at the estimate is
numerically singular or a standard error is not finite); ``absurd_r2`` (pseudo-R² outside
[0, 1], or a larger nested model with lower likelihood, as with the original analysis's
R² change of -146.8).  Only occupations whose three fits are all ``ok`` enter the summary; the
others are counted by status in ``RegressionResults.excluded``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Literal, Mapping, Sequence

import numpy as np
import pandas as pd
import statsmodels.api as sm
from scipy.optimize import linprog

from nlgbias.errors import InputError
from nlgbias.metrics.occupations import (
    BASE,
    CATEGORY_SEP,
    DEFAULT_ALIASES,
    GENDERS,
    _alias,
    _check_option,
    _prepare,
    explode_categories,
)

SPECS = ("a", "b", "c")
SPEC_NAMES = {"a": "categories", "b": "categories + woman", "c": "categories + woman + woman:category"}
STATUSES = ("ok", "separation", "rank_deficient", "not_converged", "singular", "absurd_r2")

_ONE_GENDER = ("occupation_regressions: category {category!r} of axis {axis!r} (model {model!r}) has only "
               "{gender} prompts; map it to its counterpart with aliases, e.g. aliases={{'lesbian': 'gay'}}")
_NO_BASE = "occupation_regressions: model {model!r} has no base prompts (axis 'base'); they are the reference"
_BAD_ALPHA = "occupation_regressions: alpha must be in (0, 1); got {value!r}"


@dataclass
class LogitFit:
    """One logit fitted on aggregated cells; numbers are ``nan`` unless ``status == "ok"``."""

    status: str
    params: pd.Series
    bse: pd.Series
    pvalues: pd.Series
    llf: float
    llnull: float
    prsquared: float
    converged: bool
    n: int
    k: int


def _separated(X: np.ndarray, k: np.ndarray, n: np.ndarray) -> bool:
    """Quasi- or complete separation of aggregated binomial data (Konis 2007, as an LP).

    Separation exists iff some direction b has x_j b >= 0 on every cell with a success,
    x_j b <= 0 on every cell with a failure, and x_j b != 0 somewhere.  Cells with both
    outcomes force x_j b = 0; the LP maximises sum s_j x_j b over the one-outcome cells
    (s = +1 all successes, -1 all failures) with each term capped at 1.
    """
    mixed = (k > 0) & (k < n)
    ones = (k == n) & (n > 0)
    zeros = (k == 0) & (n > 0)
    if not (ones.any() or zeros.any()):
        return False
    sign = np.where(ones, 1.0, -1.0)[ones | zeros]
    edge = X[ones | zeros] * sign[:, None]
    result = linprog(-edge.sum(axis=0), A_ub=np.vstack([-edge, edge]),
                     b_ub=np.r_[np.zeros(len(edge)), np.ones(len(edge))],
                     A_eq=X[mixed] if mixed.any() else None, b_eq=np.zeros(int(mixed.sum())) if mixed.any() else None,
                     bounds=[(None, None)] * X.shape[1], method="highs")
    return bool(result.status == 0 and -result.fun > 1e-7)


def fit_aggregated_logit(X: pd.DataFrame, k, n) -> LogitFit:
    """Logit of a 0/1 outcome fitted on aggregated cells, equal to ``statsmodels.Logit`` on the rows.

    Parameters
    ----------
    X : pandas.DataFrame
        One row per cell (covariate pattern), one column per parameter, the intercept included.
    k : array-like of int
        Samples of the cell with outcome 1.
    n : array-like of int
        Samples of the cell.

    Returns
    -------
    LogitFit
        ``status`` (see the module docstring), then ``params, bse, pvalues`` (Series indexed by
        the columns of ``X``), ``llf, llnull, prsquared`` (McFadden), ``converged, n, k``.
        Everything numeric is ``nan`` unless ``status == "ok"``.

    Examples
    --------
    >>> X = pd.DataFrame({"Intercept": [1.0, 1.0], "woman": [0.0, 1.0]})
    >>> fit = fit_aggregated_logit(X, k=[10, 30], n=[100, 100])
    >>> fit.status, round(float(fit.params["woman"]), 4), round(float(np.log(30 / 70) - np.log(10 / 90)), 4)
    ('ok', 1.3499, 1.3499)
    >>> fit_aggregated_logit(X, k=[0, 30], n=[100, 100]).status
    'separation'
    """
    names = list(X.columns)
    x = X.to_numpy(dtype=float)
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    nan = pd.Series(np.nan, index=names)
    total_n, total_k = int(n.sum()), int(k.sum())

    def failed(status: str, converged: bool = False) -> LogitFit:
        return LogitFit(status, nan, nan, nan, np.nan, np.nan, np.nan, converged, total_n, total_k)

    present = n > 0
    x, k, n = x[present], k[present], n[present]
    if np.linalg.matrix_rank(x) < x.shape[1]:
        return failed("rank_deficient")
    if _separated(x, k, n):
        return failed("separation")
    endog = np.r_[np.ones(len(k)), np.zeros(len(k))]
    exog = np.vstack([x, x])
    weights = np.r_[k, n - k]
    keep = weights > 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result = sm.GLM(endog[keep], exog[keep], family=sm.families.Binomial(),
                            freq_weights=weights[keep]).fit(maxiter=100, tol=1e-10)
        except (np.linalg.LinAlgError, ValueError, ZeroDivisionError):
            return failed("singular")
    converged = bool(getattr(result, "converged", True))
    if not converged:
        return failed("not_converged")
    mu = 1 / (1 + np.exp(-(x @ result.params)))
    info = x.T @ (x * (n * mu * (1 - mu))[:, None])
    bse = np.asarray(result.bse, dtype=float)
    if not np.all(np.isfinite(bse)) or np.linalg.cond(info) > 1e12:
        return failed("singular", converged)
    llf, llnull = float(result.llf), float(result.llnull)
    prsquared = 1 - llf / llnull if llnull < 0 else np.nan
    if not np.isfinite(prsquared) or prsquared < -1e-9 or prsquared > 1 + 1e-9:
        return failed("absurd_r2", converged)
    return LogitFit("ok", pd.Series(np.asarray(result.params), index=names), pd.Series(bse, index=names),
                    pd.Series(np.asarray(result.pvalues), index=names), llf, llnull, float(prsquared),
                    converged, total_n, total_k)


@dataclass
class RegressionResults:
    """Output of :func:`occupation_regressions`.

    fits
        One row per (model, axis, occupation, spec): ``status, converged, n, k, llf, llnull,
        prsquared`` and ``job_status`` (the first non-ok status of the occupation's three fits).
    terms
        One row per (model, axis, occupation, spec, term) of fits with ``status == "ok"``:
        ``coef, se, z, p``.
    summary
        The paper's Table 3, one row per (model, axis, term of spec c): ``n_jobs`` (above the
        threshold), ``n_ok``, ``n_excluded``, ``n_signif`` and ``pct_signif`` (share of ok jobs
        with p < alpha in spec c), ``r2_a, r2_b, r2_c`` (mean McFadden R², percent),
        ``delta_r2_woman`` (mean of r2_b - r2_a) and ``delta_r2_interactions`` (mean of
        r2_c - r2_b), in percentage points, over the ok jobs.
    excluded
        One row per (model, axis, spec, status) with ``n_jobs``: why occupations were left out.
    meta
        Settings and method notes.
    """

    fits: pd.DataFrame
    terms: pd.DataFrame
    summary: pd.DataFrame
    excluded: pd.DataFrame
    meta: dict = field(default_factory=dict)


def _cells(jobs: pd.DataFrame, calls: pd.DataFrame, population: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per prompt cell (gender, category): n, and k per occupation (samples mentioning it)."""
    cell = ["gender", "category"]
    if population == "titled":
        n = calls.groupby(cell)["n_titled"].sum()
    else:
        n = calls.groupby(cell)["n_calls"].sum()
    k = (jobs.drop_duplicates(["model", "group", "generation_id", "occupation"])
         .groupby(["occupation", *cell]).size().unstack("occupation", fill_value=0))
    k = k.reindex(n.index, fill_value=0)
    return n.reset_index(name="n"), k.reset_index(drop=True)


def _designs(cells: pd.DataFrame, categories: list[str]) -> dict[str, pd.DataFrame]:
    parts = cells["category"].map(lambda v: set() if v == BASE else set(v.split(CATEGORY_SEP)))
    woman = (cells["gender"] == "woman").astype(float).to_numpy()
    cat = pd.DataFrame({c: parts.map(lambda s, c=c: float(c in s)).to_numpy() for c in categories})
    a = pd.concat([pd.DataFrame({"Intercept": np.ones(len(cells))}), cat], axis=1)
    b = a.assign(woman=woman)
    c = b.assign(**{f"woman:{name}": woman * cat[name].to_numpy() for name in categories})
    return {"a": a, "b": b, "c": c}


def occupation_regressions(jobs: pd.DataFrame, calls: pd.DataFrame, *, axes: Sequence[str] | None = None,
                           min_share: float = 0.0025, population: Literal["titled", "calls"] = "titled",
                           aliases: Mapping[str, str] | None = None, alpha: float = 0.05) -> RegressionResults:
    """Nested logits per occupation and axis, with McFadden R² gains (the paper's Table 3).

    Parameters
    ----------
    jobs, calls : pandas.DataFrame
        See :mod:`nlgbias.metrics.occupations`.  Base prompts (axis ``"base"``) must be present:
        base man is the reference.
    axes : sequence of str, optional
        Default: every axis in ``calls`` except ``"base"``.
    min_share : float, default=0.0025
        An occupation is fitted for an axis when its mentions in the regression's rows (base plus
        the axis) reach ``min_share`` of their calls (the paper's 0.25% threshold).
    population : {"titled", "calls"}, default="titled"
        The rows of the regression: samples with at least one title (the paper's choice: NER
        failures were removed) or every call.
    aliases : mapping of str to str, optional
        Category renames so that every category has both genders; default ``{"lesbian": "gay"}``
        (the paper codes "lesbian woman" as the woman of "gay").  Pass ``{}`` for none.
        Multi-continent names (``"Americas|Europe"``) get a 1 on each of their continents.
    alpha : float, default=0.05

    Returns
    -------
    RegressionResults
        ``fits``, ``terms``, ``summary``, ``excluded`` and ``meta``; see :class:`RegressionResults`.

    Raises
    ------
    nlgbias.errors.InputError
        A category with prompts of one gender only, or a model without base prompts.

    Notes
    -----
    Design per axis: intercept, one dummy per category (base = all zeros), ``woman``, and
    ``woman:<category>``; reference cell base man.  p-values are Wald z-tests, as in
    ``statsmodels.Logit``.  See the module docstring for the aggregated fit and the flags.

    References
    ----------
    Kirk, H. R. et al. (2021). Bias Out-of-the-Box. NeurIPS 2021, Sec. 3.3, Table 3, Appendix F.
    McFadden, D. (1974). Conditional logit analysis of qualitative choice behavior.
    Konis, K. (2007). Linear programming algorithms for detecting separated data in binary
    logistic regression models. DPhil thesis, University of Oxford.
    """
    if not 0 < alpha < 1:
        raise InputError(_BAD_ALPHA.format(value=alpha))
    _check_option(population, ("titled", "calls"), "occupation_regressions", "population")
    aliases = DEFAULT_ALIASES if aliases is None else dict(aliases)
    jobs, calls = _prepare(jobs, calls, "occupation_regressions")
    jobs = jobs.assign(category=_alias(jobs["category"], aliases))
    calls = calls.assign(category=_alias(calls["category"], aliases))
    axes = [a for a in dict.fromkeys(calls["axis"]) if a != BASE] if axes is None else list(axes)
    fit_rows, term_rows = [], []
    n_jobs: dict[tuple[str, str], tuple[int, list[str]]] = {}
    for model in sorted(calls["model"].unique()):
        model_calls = calls[calls["model"] == model]
        model_jobs = jobs[jobs["model"] == model]
        if not (model_calls["axis"] == BASE).any():
            raise InputError(_NO_BASE.format(model=model))
        for axis in axes:
            rows_calls = model_calls[model_calls["axis"].isin([BASE, axis])]
            if not (rows_calls["axis"] == axis).any():
                continue
            rows_jobs = model_jobs[model_jobs["axis"].isin([BASE, axis])]
            _check_both_genders(rows_calls, model, axis)
            mentions = rows_jobs.groupby("occupation").size()
            selected = sorted(mentions.index[mentions >= min_share * rows_calls["n_calls"].sum() - 1e-12])
            if not selected:
                n_jobs[(model, axis)] = (0, [])
                continue
            cells, k = _cells(rows_jobs[rows_jobs["occupation"].isin(selected)], rows_calls, population)
            categories = sorted({p for v in cells["category"] if v != BASE for p in v.split(CATEGORY_SEP)})
            designs = _designs(cells, categories)
            n_jobs[(model, axis)] = (len(selected), list(designs["c"].columns))
            for occupation in selected:
                fits = {spec: fit_aggregated_logit(designs[spec], k[occupation].to_numpy(), cells["n"].to_numpy())
                        for spec in SPECS}
                _check_nesting(fits)
                job_status = next((f.status for f in fits.values() if f.status != "ok"), "ok")
                for spec, fit in fits.items():
                    fit_rows.append([model, axis, occupation, spec, fit.status, fit.converged, fit.n, fit.k,
                                     fit.llf, fit.llnull, fit.prsquared, job_status])
                    if fit.status == "ok":
                        z = fit.params / fit.bse
                        for term in fit.params.index:
                            term_rows.append([model, axis, occupation, spec, term, fit.params[term], fit.bse[term],
                                              z[term], fit.pvalues[term]])
    fits = pd.DataFrame(fit_rows, columns=["model", "axis", "occupation", "spec", "status", "converged", "n", "k",
                                           "llf", "llnull", "prsquared", "job_status"])
    terms = pd.DataFrame(term_rows, columns=["model", "axis", "occupation", "spec", "term", "coef", "se", "z", "p"])
    summary = _summary(fits, terms, n_jobs, alpha)
    excluded = (fits[fits["status"] != "ok"].groupby(["model", "axis", "spec", "status"]).size()
                .rename("n_jobs").reset_index())
    meta = {
        "specs": SPEC_NAMES, "reference": "base man", "alpha": alpha, "min_share": min_share,
        "population": population, "aliases": dict(aliases),
        "fit": "binomial GLM (logit) on aggregated cells with frequency weights; equal to Logit on the rows",
        "r2": "McFadden pseudo-R2 = 1 - llf/llnull, reported in percent; deltas in percentage points",
        "exclusion": "occupations with any spec not ok are left out of summary and counted in excluded",
    }
    return RegressionResults(fits=fits, terms=terms, summary=summary, excluded=excluded, meta=meta)


def _check_both_genders(rows_calls: pd.DataFrame, model: str, axis: str) -> None:
    genders = explode_categories(rows_calls).groupby("category")["gender"].agg(lambda g: set(g))
    for category, present in genders.items():
        if set(GENDERS) - present:
            raise InputError(_ONE_GENDER.format(category=category, axis=axis, model=model,
                                                gender=" and ".join(sorted(present))))


def _check_nesting(fits: dict[str, LogitFit]) -> None:
    """A larger nested model cannot fit worse; if it does, the fit is not to be trusted."""
    for small, large in (("a", "b"), ("b", "c")):
        s, g = fits[small], fits[large]
        if s.status == "ok" and g.status == "ok" and g.llf < s.llf - 1e-6 * max(1.0, abs(s.llf)):
            fits[large] = LogitFit("absurd_r2", g.params * np.nan, g.bse * np.nan, g.pvalues * np.nan,
                                   np.nan, np.nan, np.nan, g.converged, g.n, g.k)


def _summary(fits: pd.DataFrame, terms: pd.DataFrame, n_jobs: dict, alpha: float) -> pd.DataFrame:
    columns = ["model", "axis", "term", "n_jobs", "n_ok", "n_excluded", "n_signif", "pct_signif",
               "r2_a", "r2_b", "r2_c", "delta_r2_woman", "delta_r2_interactions"]
    rows = []
    for (model, axis), (total, names) in n_jobs.items():
        part = fits[(fits["model"] == model) & (fits["axis"] == axis)]
        ok_jobs = sorted(part.loc[part["job_status"] == "ok", "occupation"].unique())
        r2 = (part[part["occupation"].isin(ok_jobs)].pivot(index="occupation", columns="spec", values="prsquared")
              .reindex(columns=list(SPECS)) * 100)
        means = r2.mean() if len(r2) else pd.Series(np.nan, index=list(SPECS))
        d_woman = (r2["b"] - r2["a"]).mean() if len(r2) else np.nan
        d_inter = (r2["c"] - r2["b"]).mean() if len(r2) else np.nan
        full = terms[(terms["model"] == model) & (terms["axis"] == axis) & (terms["spec"] == "c")
                     & terms["occupation"].isin(ok_jobs)]
        for term in names:
            p = full.loc[full["term"] == term, "p"]
            n_signif = int((p < alpha).sum())
            rows.append([model, axis, term, total, len(ok_jobs), total - len(ok_jobs), n_signif,
                         n_signif / len(ok_jobs) if ok_jobs else np.nan, means["a"], means["b"], means["c"],
                         d_woman, d_inter])
    return pd.DataFrame(rows, columns=columns)
