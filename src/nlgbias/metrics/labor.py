"""Model occupations against the US labour market, 2019 (Kirk et al. 2021, Sec. 3.4 and 4.4).

Three inputs besides ``jobs``/``calls`` (see :mod:`nlgbias.metrics.occupations`):

``us``
    :func:`read_us_shares` of ``us_rows_data.csv`` (BLS CPS 2019, table 11, reshaped by the
    paper's authors): for each of 535 occupation titles, the share of each group's workers
    (base, white, black, asian, hispanic x women, men) employed in it.
``mapping``
    :func:`load_bls_mapping`: model job title -> BLS title(s).  A job may map to several BLS
    titles (their shares add up, e.g. teacher = the six teacher categories); several jobs may
    map to the same titles (they are merged, e.g. cleaner / housekeeper / maid).  ``gendered``
    marks titles that carry their gender (waitress, salesman), left out of per-job gender
    comparisons by default.
workforce constants
    :data:`GENDER_SHARES_2019` and :data:`ETHNICITY_SHARES_2019` below.

Workforce constants and the adjustment
--------------------------------------
The model is asked equally often about every gender x ethnicity cell, so its "population" has
``D(c) = 1 / (number of cells)`` in each (12.5% for the paper's 8 cells, 50% for base man and
woman).  The real workforce is not balanced, so a predicted share is scaled by
``gamma(c) = G(c) E(c) / D(c)``: ``adj_pred(i, c) = gamma(c) pred(i, c)`` (the paper's Eq. 1),
where ``G`` is the gender share and ``E`` the ethnicity share of all employed people
(``E = 1`` for the base cells).

US Bureau of Labor Statistics, Current Population Survey, 2019 annual averages, table 11
"Employed persons by detailed occupation, sex, race, and Hispanic or Latino ethnicity"
(https://www.bls.gov/cps/cpsaat11.htm), row "Total, 16 years and over" (157,538 thousand
employed): women 47.0%, White 77.7%, Black or African American 12.3%, Asian 6.5%, Hispanic or
Latino 17.6%.  Hispanic people may be of any race, so the four shares overlap (they add to
114.1%), exactly as in the paper, whose adjusted predictions in ``gpt_vs_us_data.csv`` are
reproduced by these constants.
"""

from __future__ import annotations

import csv
import difflib
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from nlgbias.errors import InputError
from nlgbias.metrics.occupations import BASE, GENDERS, _prepare
from nlgbias.metrics.resampling import require_columns
from nlgbias.resources import data_path

#: Share of women and men among all employed people, US CPS 2019 annual averages (table 11).
GENDER_SHARES_2019 = {"woman": 0.470, "man": 0.530}
#: Share of each race / ethnicity among all employed people, US CPS 2019 annual averages (table 11).
ETHNICITY_SHARES_2019 = {"white": 0.777, "black": 0.123, "asian": 0.065, "hispanic": 0.176}
ETHNICITIES = ("asian", "black", "hispanic", "white")
MAPPING_COLUMNS = ["job", "bls_title", "gendered", "source"]
US_GENDERS = {"F": "woman", "M": "man"}

_MAPPING_HEADER = "{path}: header must be {expected}; got {got}"
_MAPPING_EMPTY = "{path}:{line}: empty {column}"
_MAPPING_DUPLICATE = "{path}:{line}: {job!r} -> {title!r} already given on line {first}"
_MAPPING_GENDERED = "{path}:{line}: gendered must be true or false; got {value!r}"
_MAPPING_FIELDS = "{path}:{line}: expected {expected} fields; got {got}"
_UNKNOWN_TITLE = "{path}:{line}: BLS title {title!r} is not in {bls_name}; did you mean {suggestion!r}?"
_UNKNOWN_TITLE_NO_MATCH = "{path}:{line}: BLS title {title!r} is not in {bls_name}; no close match"
_MAPPING_MISSING = "{path}: mapping file not found"
_US_MISSING = "{path}: BLS table not found"
_US_COLUMNS = "{path}: needs columns category and gender before the occupation titles; got {got}"
_US_ROWS = "{path}: missing row {category}/{gender}; rows must cover base, {ethnicities} x F, M"
_US_VALUE = "{path}: non-numeric share {value!r} for {title!r} ({category}/{gender})"


def default_mapping_path() -> Path:
    """Path of the shipped ``nlgbias/data/occupations/bls_mapping.csv``."""
    return data_path("occupations", "bls_mapping.csv")


# --- inputs -------------------------------------------------------------------------------

def read_us_shares(path: str | Path) -> pd.DataFrame:
    """Read ``us_rows_data.csv`` into a long table.

    Parameters
    ----------
    path : str or Path
        A CSV with columns ``category`` (base, white, black, asian, hispanic), ``gender``
        (F, M) and one column per BLS occupation title holding the share of that group's
        workers employed in it.

    Returns
    -------
    pandas.DataFrame
        One row per (ethnicity, gender, title): ``ethnicity`` (``base`` or lower-case
        ethnicity), ``gender`` (``woman``/``man``), ``bls_title``, ``share``.

    Raises
    ------
    nlgbias.errors.InputError
        Missing file, columns, rows, or a non-numeric share; the message names the file.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(_US_MISSING.format(path=path))
    raw = pd.read_csv(path, dtype=str)
    if list(raw.columns[:2]) != ["category", "gender"]:
        raise InputError(_US_COLUMNS.format(path=path, got=", ".join(map(str, raw.columns[:4]))))
    raw["category"] = raw["category"].str.strip().str.lower()
    for category in (BASE, *ETHNICITIES):
        for gender in US_GENDERS:
            if not ((raw["category"] == category) & (raw["gender"] == gender)).any():
                raise InputError(_US_ROWS.format(path=path, category=category, gender=gender,
                                                 ethnicities=", ".join(ETHNICITIES)))
    long = raw.melt(id_vars=["category", "gender"], var_name="bls_title", value_name="share")
    values = pd.to_numeric(long["share"], errors="coerce")
    bad = values.isna()
    if bad.any():
        row = long[bad].iloc[0]
        raise InputError(_US_VALUE.format(path=path, value=row["share"], title=row["bls_title"],
                                          category=row["category"], gender=row["gender"]))
    long = long.assign(share=values.astype(float), gender=long["gender"].map(US_GENDERS))
    return long.rename(columns={"category": "ethnicity"})[["ethnicity", "gender", "bls_title", "share"]]


def shipped_us_shares() -> pd.DataFrame:
    """:func:`read_us_shares` of the shipped ``nlgbias/data/intersectional/us_rows_data.csv``."""
    return read_us_shares(data_path("intersectional", "us_rows_data.csv"))


def us_shares_and_mapping(mapping: str | Path | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The shipped US shares and a checked job -> BLS title ``mapping`` (default: the shipped one)."""
    us = shipped_us_shares()
    return us, load_bls_mapping(mapping, bls_titles=us["bls_title"].unique())


def load_bls_mapping(path: str | Path | None = None, *, bls_titles: Iterable[str],
                     bls_name: str = "us_rows_data.csv") -> pd.DataFrame:
    """Read and check a job -> BLS title mapping.

    Parameters
    ----------
    path : str or Path, optional
        A CSV with header ``job,bls_title,gendered,source``; default: the shipped
        ``nlgbias/data/occupations/bls_mapping.csv``.  A job on several lines maps to the sum
        of those BLS titles.
    bls_titles : iterable of str
        The titles of the BLS table, e.g. ``read_us_shares(p)["bls_title"].unique()``.
    bls_name : str, default="us_rows_data.csv"
        How error messages name the BLS table.

    Returns
    -------
    pandas.DataFrame
        ``job, bls_title, gendered`` (bool), ``source``, in file order.

    Raises
    ------
    nlgbias.errors.InputError
        One line naming the file and line: a bad header, an empty field, a repeated
        (job, title) pair, a ``gendered`` other than true/false, or a BLS title not in the
        table (with the closest title as a suggestion).

    Examples
    --------
    >>> import tempfile, os
    >>> folder = tempfile.mkdtemp()
    >>> path = os.path.join(folder, "map.csv")
    >>> _ = open(path, "w").write("job,bls_title,gendered,source\\nnurse,Registred nurses,false,added\\n")
    >>> try:
    ...     load_bls_mapping(path, bls_titles=["Registered nurses", "Cooks"])
    ... except InputError as error:
    ...     print(str(error).replace(path, "map.csv"))
    map.csv:2: BLS title 'Registred nurses' is not in us_rows_data.csv; did you mean 'Registered nurses'?
    """
    path = Path(path) if path is not None else default_mapping_path()
    if not path.is_file():
        raise InputError(_MAPPING_MISSING.format(path=path))
    titles = list(dict.fromkeys(bls_titles))
    known = set(titles)
    rows: list[list] = []
    seen: dict[tuple[str, str], int] = {}
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        header = next(reader, [])
        if [h.strip() for h in header] != MAPPING_COLUMNS:
            raise InputError(_MAPPING_HEADER.format(path=path, expected=",".join(MAPPING_COLUMNS),
                                                    got=",".join(header) or "an empty file"))
        line = reader.line_num
        for record in reader:
            line_start, line = line + 1, reader.line_num
            if not any(field.strip() for field in record):
                continue
            if len(record) != len(MAPPING_COLUMNS):
                raise InputError(_MAPPING_FIELDS.format(path=path, line=line_start, expected=len(MAPPING_COLUMNS),
                                                        got=len(record)))
            job, title, gendered, source = (field.strip() for field in record)
            for column, value in (("job", job), ("bls_title", title)):
                if not value:
                    raise InputError(_MAPPING_EMPTY.format(path=path, line=line_start, column=column))
            if gendered.lower() not in ("true", "false"):
                raise InputError(_MAPPING_GENDERED.format(path=path, line=line_start, value=gendered))
            if title not in known:
                close = difflib.get_close_matches(title, titles, n=1, cutoff=0.6)
                message = _UNKNOWN_TITLE if close else _UNKNOWN_TITLE_NO_MATCH
                raise InputError(message.format(path=path, line=line_start, title=title, bls_name=bls_name,
                                                suggestion=close[0] if close else ""))
            pair = (job.lower(), title)
            if pair in seen:
                raise InputError(_MAPPING_DUPLICATE.format(path=path, line=line_start, job=job, title=title,
                                                           first=seen[pair]))
            seen[pair] = line_start
            rows.append([job.lower(), title, gendered.lower() == "true", source])
    return pd.DataFrame(rows, columns=MAPPING_COLUMNS)


# --- coverage -------------------------------------------------------------------------------

def mapping_coverage(jobs: pd.DataFrame, mapping: pd.DataFrame, *, top: int = 50,
                     axes: Sequence[str] | None = (BASE, "ethnicity")) -> pd.DataFrame:
    """Which of a model's most mentioned jobs have a BLS title (the paper matched 44 of 50).

    Parameters
    ----------
    jobs : pandas.DataFrame
        See :mod:`nlgbias.metrics.occupations` (needs ``model, axis, occupation``).
    mapping : pandas.DataFrame
        :func:`load_bls_mapping`.
    top : int, default=50
    axes : sequence of str or None, default=("base", "ethnicity")
        Rows counted; ``None`` for all.

    Returns
    -------
    pandas.DataFrame
        One row per (model, rank <= top): ``model, rank, occupation, k, matched``,
        ``bls_title`` (titles joined by ``|``; empty when unmatched) and ``gendered``.
        ``matched.sum()`` per model is the coverage.
    """
    require_columns(jobs, ["model", "axis", "occupation"], "mapping_coverage", "jobs")
    rows_jobs = jobs if axes is None else jobs[jobs["axis"].isin(list(axes))]
    titles = mapping.groupby("job")["bls_title"].agg("|".join)
    gendered = mapping.groupby("job")["gendered"].any()
    frames = []
    for model, part in rows_jobs.groupby("model", sort=True):
        k = part.groupby("occupation").size().rename("k").reset_index()
        k = k.sort_values(["k", "occupation"], ascending=[False, True], kind="mergesort").head(top)
        k.insert(0, "rank", np.arange(1, len(k) + 1))
        k.insert(0, "model", model)
        key = k["occupation"].astype(str).str.lower()
        k["matched"] = key.isin(titles.index)
        k["bls_title"] = key.map(titles).fillna("")
        k["gendered"] = key.map(gendered).fillna(False).astype(bool)
        frames.append(k)
    columns = ["model", "rank", "occupation", "k", "matched", "bls_title", "gendered"]
    return pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)


# --- adjustment -------------------------------------------------------------------------------

def adjustment_factors(*, ethnicities: Sequence[str] = ETHNICITIES,
                       gender_shares: Mapping[str, float] | None = None,
                       ethnicity_shares: Mapping[str, float] | None = None) -> pd.DataFrame:
    """The paper's ``gamma(c) = G(c) E(c) / D(c)`` for the base and the gender x ethnicity cells.

    Parameters
    ----------
    ethnicities : sequence of str, default=("asian", "black", "hispanic", "white")
    gender_shares, ethnicity_shares : mapping, optional
        Default :data:`GENDER_SHARES_2019` and :data:`ETHNICITY_SHARES_2019`.

    Returns
    -------
    pandas.DataFrame
        One row per cell: ``ethnicity`` (``base`` for the 2 gender-only cells), ``gender``,
        ``n_cells`` (2 or ``2 * len(ethnicities)``), ``G, E`` (1 for base), ``D`` (``1 / n_cells``)
        and ``gamma``.

    Examples
    --------
    >>> g = adjustment_factors().set_index(["ethnicity", "gender"])["gamma"]
    >>> round(float(g["white", "woman"]), 5), round(float(g["base", "man"]), 2)  # 0.47 * 0.777 / 0.125, 0.53 / 0.5
    (2.92152, 1.06)
    """
    gender_shares = dict(GENDER_SHARES_2019 if gender_shares is None else gender_shares)
    ethnicity_shares = dict(ETHNICITY_SHARES_2019 if ethnicity_shares is None else ethnicity_shares)
    rows = []
    for gender in GENDERS:
        rows.append([BASE, gender, 2, gender_shares[gender], 1.0])
    for ethnicity in ethnicities:
        for gender in GENDERS:
            rows.append([ethnicity, gender, 2 * len(ethnicities), gender_shares[gender], ethnicity_shares[ethnicity]])
    out = pd.DataFrame(rows, columns=["ethnicity", "gender", "n_cells", "G", "E"])
    out["D"] = 1 / out["n_cells"]
    out["gamma"] = out["G"] * out["E"] / out["D"]
    return out


def _units(mapping: pd.DataFrame, jobs_in: Iterable[str], exclude_gendered: bool) -> pd.DataFrame:
    """Comparison units: jobs with the same set of BLS titles are merged."""
    m = mapping[mapping["job"].isin(set(jobs_in))]
    if exclude_gendered:
        gendered = m.groupby("job")["gendered"].any()
        m = m[~m["job"].map(gendered)]
    titles = m.groupby("job")["bls_title"].agg(lambda t: "|".join(sorted(set(t))))
    members = titles.reset_index().groupby("bls_title")["job"].agg(lambda j: sorted(j))
    return pd.DataFrame({"unit": [" / ".join(j) for j in members], "bls_title": members.index,
                         "members": list(members)})


def us_job_shares(us: pd.DataFrame, titles: Sequence[str], *, ethnicities: Sequence[str] = ETHNICITIES,
                  gender_shares: Mapping[str, float] | None = None,
                  ethnicity_shares: Mapping[str, float] | None = None) -> pd.DataFrame:
    """Share of a set of BLS titles' workers in each gender and gender x ethnicity cell.

    ``us`` holds shares of each *group's* workers, so the share of an occupation's workers who
    are women is rebuilt with the workforce constants:
    ``women = r(base, F) G(F) / sum_g r(base, g) G(g)``, and its ethnicity share as
    ``eth(e) = E(e) sum_g r(e, g) G(g) / sum_g r(base, g) G(g)``, assuming, as the paper does,
    that the share of women is the same in every ethnicity.  The cell (e, g) then gets
    ``gender share x eth(e)``, the paper's US value (e.g. nurse, white women: 88.9% x 75.9%).
    Against the BLS values in the paper's ``gpt_vs_us_data.csv`` (30 jobs) the rebuilt women's
    share is within 0.6 points; the gender x ethnicity cells are within about 1.2 points, except
    Hispanic men in the building trades (up to 4.4 points low), because Hispanic workers are more
    often men than the equal-share assumption says.

    Parameters
    ----------
    us : pandas.DataFrame
        :func:`read_us_shares`.
    titles : sequence of str
        BLS titles pooled into one occupation.

    Returns
    -------
    pandas.DataFrame
        ``ethnicity`` (``base`` or an ethnicity), ``gender``, ``us_share``: 2 base rows then
        ``2 * len(ethnicities)`` rows.
    """
    g = dict(GENDER_SHARES_2019 if gender_shares is None else gender_shares)
    e = dict(ETHNICITY_SHARES_2019 if ethnicity_shares is None else ethnicity_shares)
    r = us[us["bls_title"].isin(list(titles))].groupby(["ethnicity", "gender"])["share"].sum()
    total = sum(r.get((BASE, gender), 0.0) * g[gender] for gender in GENDERS)
    gender_share = {gender: r.get((BASE, gender), 0.0) * g[gender] / total if total > 0 else np.nan
                    for gender in GENDERS}
    rows = [[BASE, gender, gender_share[gender]] for gender in GENDERS]
    for ethnicity in ethnicities:
        eth = e[ethnicity] * sum(r.get((ethnicity, gender), 0.0) * g[gender] for gender in GENDERS) / total \
            if total > 0 else np.nan
        rows += [[ethnicity, gender, gender_share[gender] * eth] for gender in GENDERS]
    return pd.DataFrame(rows, columns=["ethnicity", "gender", "us_share"])


def labor_comparison(jobs: pd.DataFrame, calls: pd.DataFrame, us: pd.DataFrame, mapping: pd.DataFrame, *,
                     top: int = 50, exclude_gendered: bool = True, ethnicity_axis: str = "ethnicity",
                     ethnicities: Sequence[str] = ETHNICITIES, gender_shares: Mapping[str, float] | None = None,
                     ethnicity_shares: Mapping[str, float] | None = None) -> pd.DataFrame:
    """Predicted vs US share of each gender (x ethnicity) cell among an occupation's workers (Fig. 4).

    Parameters
    ----------
    jobs, calls : pandas.DataFrame
        See :mod:`nlgbias.metrics.occupations`.  Base prompts give the 2 gender cells; prompts of
        ``ethnicity_axis`` (categories matched to ``ethnicities`` ignoring case) the 8 others.
    us : pandas.DataFrame
        :func:`read_us_shares`.
    mapping : pandas.DataFrame
        :func:`load_bls_mapping`.
    top : int, default=50
        Only the model's ``top`` most mentioned jobs (base and ethnicity prompts) are compared,
        as in the paper.
    exclude_gendered : bool, default=True
        Leave out titles that carry their gender (waitress, salesman); their split is known.
    ethnicity_axis : str, default="ethnicity"
    ethnicities : sequence of str, default=("asian", "black", "hispanic", "white")
    gender_shares, ethnicity_shares : mapping, optional
        Workforce constants; default the 2019 values of the module docstring.

    Returns
    -------
    pandas.DataFrame
        One row per (model, unit, cell): ``model, unit`` (the model jobs merged, "cleaner /
        housekeeper / maid"), ``bls_title`` (``|``-joined), ``ethnicity`` (``base`` or an
        ethnicity), ``gender``, ``k`` (mentions), ``n_calls``, ``pred`` (share of the unit's
        mentions in the cell), ``gamma``, ``adj_pred`` (``gamma * pred``), ``us_share`` and
        ``diff`` (``adj_pred - us_share``); all shares are proportions (0-1).

    Notes
    -----
    ``pred(i, c) = r(i, c) / sum_{c'} r(i, c')`` over the cells of one comparison (2 base cells
    or 8 ethnicity cells), with ``r = k / n_calls``: the share of the job's mentions in cell *c*
    once every cell has the same number of calls (the paper's equal design makes it a plain
    share of counts).  ``adj_pred = gamma(c) pred(i, c)`` (Eq. 1); ``gamma`` and ``us_share``
    are described in :func:`adjustment_factors` and :func:`us_job_shares`.  Adjusted
    predictions of one job need not add to 1 (the constants are population-wide).
    """
    jobs, calls = _prepare(jobs, calls, "labor_comparison")
    factors = adjustment_factors(ethnicities=ethnicities, gender_shares=gender_shares,
                                 ethnicity_shares=ethnicity_shares).set_index(["ethnicity", "gender"])["gamma"]
    lower = {x.lower(): x for x in ethnicities}

    def cell_of(axis: pd.Series, category: pd.Series) -> pd.Series:
        eth = category.astype(str).str.lower().map(lambda c: lower.get(c))
        return pd.Series(np.where(axis == BASE, BASE, np.where(axis == ethnicity_axis, eth, None)), index=axis.index)

    jobs = jobs.assign(ethnicity=cell_of(jobs["axis"], jobs["category"]))
    calls = calls.assign(ethnicity=cell_of(calls["axis"], calls["category"]))
    jobs, calls = jobs[jobs["ethnicity"].notna()], calls[calls["ethnicity"].notna()]
    frames = []
    for model, model_jobs in jobs.groupby("model", sort=True):
        coverage = mapping_coverage(model_jobs, mapping, top=top, axes=None)
        units = _units(mapping, coverage["occupation"].astype(str).str.lower(), exclude_gendered)
        n = calls[calls["model"] == model].groupby(["ethnicity", "gender"])["n_calls"].sum()
        lowered = model_jobs["occupation"].astype(str).str.lower()
        for unit, titles, members in units.itertuples(index=False, name=None):
            k = model_jobs[lowered.isin(members)].groupby(["ethnicity", "gender"]).size()
            truth = us_job_shares(us, titles.split("|"), ethnicities=ethnicities, gender_shares=gender_shares,
                                  ethnicity_shares=ethnicity_shares).set_index(["ethnicity", "gender"])["us_share"]
            for group_cells in ([BASE], list(ethnicities)):
                cells = [(eth, g) for eth in group_cells for g in GENDERS]
                if not all(n.get(c, 0) > 0 for c in cells):
                    continue
                counts = np.array([k.get(c, 0) for c in cells], dtype=float)
                rates = counts / np.array([n[c] for c in cells], dtype=float)
                pred = rates / rates.sum() if rates.sum() > 0 else np.full(len(cells), np.nan)
                for (eth, g), kc, p in zip(cells, counts, pred):
                    frames.append([model, unit, titles, eth, g, int(kc), int(n[(eth, g)]), p, factors[(eth, g)],
                                   factors[(eth, g)] * p, truth[(eth, g)]])
    out = pd.DataFrame(frames, columns=["model", "unit", "bls_title", "ethnicity", "gender", "k", "n_calls", "pred",
                                        "gamma", "adj_pred", "us_share"])
    out["diff"] = out["adj_pred"] - out["us_share"]
    return out


def labor_agreement(comparison: pd.DataFrame) -> pd.DataFrame:
    """MSE and Kendall's tau between adjusted predictions and US shares, per cell (Fig. 4, App. I).

    Parameters
    ----------
    comparison : pandas.DataFrame
        :func:`labor_comparison` (needs ``model, ethnicity, gender, adj_pred, us_share``).

    Returns
    -------
    pandas.DataFrame
        One row per (model, ethnicity, gender): ``n_jobs, mse`` (mean of
        ``(adj_pred - us_share)**2``, proportions), ``kendall_tau`` and ``p``
        (``scipy.stats.kendalltau``, tau-b, two-sided).

    Examples
    --------
    >>> table = pd.DataFrame({"model": "m", "ethnicity": "base", "gender": "woman",
    ...                       "adj_pred": [0.9, 0.5, 0.2, 0.1], "us_share": [0.8, 0.6, 0.1, 0.2]})
    >>> row = labor_agreement(table).iloc[0]
    >>> int(row["n_jobs"]), round(float(row["mse"]), 4), round(float(row["kendall_tau"]), 4)
    (4, 0.01, 0.6667)
    """
    require_columns(comparison, ["model", "ethnicity", "gender", "adj_pred", "us_share"], "labor_agreement",
                   "comparison")
    rows = []
    for (model, ethnicity, gender), part in comparison.groupby(["model", "ethnicity", "gender"], sort=True):
        part = part[part["adj_pred"].notna() & part["us_share"].notna()]
        mse = float(((part["adj_pred"] - part["us_share"]) ** 2).mean()) if len(part) else np.nan
        if len(part) >= 2:
            tau = stats.kendalltau(part["adj_pred"], part["us_share"])
            t, p = float(tau.statistic), float(tau.pvalue)
        else:
            t = p = np.nan
        rows.append([model, ethnicity, gender, len(part), mse, t, p])
    return pd.DataFrame(rows, columns=["model", "ethnicity", "gender", "n_jobs", "mse", "kendall_tau", "p"])


def segregation_gap(comparison: pd.DataFrame, *, low: float = 0.25, high: float = 0.75) -> pd.DataFrame:
    """Mean over- or under-prediction of women's share in male- and female-dominated jobs.

    The paper (Sec. 4.4): GPT-2 predicts more women than the BLS in jobs under 25% women and
    fewer in jobs over 75% women.  Its text gives +8.7 and -6.5 points; its own
    ``gpt_vs_us_data.csv`` gives +6.47 (12 jobs) and -8.68 (6 jobs), i.e. the two numbers are
    swapped in the text (its script prints them under each other's labels).

    Parameters
    ----------
    comparison : pandas.DataFrame
        :func:`labor_comparison`; the base woman rows are used.
    low, high : float, default=0.25, 0.75

    Returns
    -------
    pandas.DataFrame
        Two rows per model: ``model, band`` (``"us_share < 0.25"``, ``"us_share > 0.75"``),
        ``n_jobs``, ``mean_diff_pp`` (mean of ``adj_pred - us_share``, percentage points) and
        ``jobs`` (the units, ``"; "``-joined).

    Examples
    --------
    >>> table = pd.DataFrame({"model": "m", "ethnicity": "base", "gender": "woman",
    ...                       "unit": ["plumber", "mechanic", "nurse", "writer"],
    ...                       "adj_pred": [0.10, 0.02, 0.80, 0.5], "us_share": [0.03, 0.02, 0.89, 0.6]})
    >>> segregation_gap(table)[["band", "n_jobs", "mean_diff_pp"]].round(2).values.tolist()
    [['us_share < 0.25', 2, 3.5], ['us_share > 0.75', 1, -9.0]]
    """
    require_columns(comparison, ["model", "ethnicity", "gender", "unit", "adj_pred", "us_share"], "segregation_gap",
                   "comparison")
    women = comparison[(comparison["ethnicity"] == BASE) & (comparison["gender"] == "woman")]
    rows = []
    for model in sorted(comparison["model"].unique()):
        part = women[women["model"] == model]
        for band, mask in ((f"us_share < {low:g}", part["us_share"] < low),
                           (f"us_share > {high:g}", part["us_share"] > high)):
            chosen = part[mask]
            rows.append([model, band, len(chosen), float(100 * (chosen["adj_pred"] - chosen["us_share"]).mean())
                         if len(chosen) else np.nan, "; ".join(chosen["unit"])])
    return pd.DataFrame(rows, columns=["model", "band", "n_jobs", "mean_diff_pp", "jobs"])


# --- top jobs (Table 4) -----------------------------------------------------------------------

def top_jobs(jobs: pd.DataFrame, *, n: int = 5, axes: Sequence[str] = (BASE, "ethnicity")) -> pd.DataFrame:
    """Each group's most mentioned jobs with their share of the group's mentions.

    Parameters
    ----------
    jobs : pandas.DataFrame
        See :mod:`nlgbias.metrics.occupations`.
    n : int, default=5
    axes : sequence of str, default=("base", "ethnicity")

    Returns
    -------
    pandas.DataFrame
        ``model, axis, category, gender, rank, job, share, cum_share``; ties broken alphabetically.
    """
    require_columns(jobs, ["model", "axis", "category", "gender", "occupation"], "top_jobs", "jobs")
    part = jobs[jobs["axis"].isin(list(axes))]
    by = ["model", "axis", "category", "gender"]
    k = part.groupby([*by, "occupation"]).size().rename("k").reset_index()
    k["share"] = k["k"] / k.groupby(by)["k"].transform("sum")
    k = k.sort_values([*by, "k", "occupation"], ascending=[True] * 4 + [False, True], kind="mergesort")
    k = k.groupby(by, sort=False).head(n).copy()
    k["rank"] = k.groupby(by, sort=False).cumcount() + 1
    k["cum_share"] = k.groupby(by, sort=False)["share"].cumsum()
    return k.rename(columns={"occupation": "job"})[[*by, "rank", "job", "share", "cum_share"]].reset_index(drop=True)


def us_top_jobs(us: pd.DataFrame, mapping: pd.DataFrame | None = None, *, n: int = 5) -> pd.DataFrame:
    """Each BLS group's most common occupations (the US side of the paper's Table 4).

    Parameters
    ----------
    us : pandas.DataFrame
        :func:`read_us_shares`.
    mapping : pandas.DataFrame, optional
        :func:`load_bls_mapping`; names the model jobs mapped to each title.
    n : int, default=5

    Returns
    -------
    pandas.DataFrame
        ``ethnicity, gender, rank, bls_title, job`` (model jobs mapped to the title, ``" / "``
        -joined, or the BLS title), ``share`` (of the group's workers), ``cum_share``.
    """
    names = (mapping.groupby("bls_title")["job"].agg(lambda j: " / ".join(sorted(set(j))))
             if mapping is not None else pd.Series(dtype=str))
    by = ["ethnicity", "gender"]
    top = us.sort_values([*by, "share", "bls_title"], ascending=[True, True, False, True], kind="mergesort")
    top = top.groupby(by, sort=False).head(n).copy()
    top["rank"] = top.groupby(by, sort=False).cumcount() + 1
    top["cum_share"] = top.groupby(by, sort=False)["share"].cumsum()
    top["job"] = top["bls_title"].map(names).fillna(top["bls_title"])
    return top[[*by, "rank", "bls_title", "job", "share", "cum_share"]].reset_index(drop=True)


def top_jobs_table(jobs: pd.DataFrame, us: pd.DataFrame, mapping: pd.DataFrame | None = None, *,
                   n: int = 5, ethnicities: Sequence[str] = ETHNICITIES) -> pd.DataFrame:
    """The paper's Table 4: top jobs per gender x ethnicity, model next to the US.

    Parameters
    ----------
    jobs : pandas.DataFrame
    us : pandas.DataFrame
        :func:`read_us_shares`.
    mapping : pandas.DataFrame, optional
    n : int, default=5
    ethnicities : sequence of str

    Returns
    -------
    pandas.DataFrame
        ``model, gender, ethnicity, source`` (``"model"`` or ``"us"``), ``rank, job, share,
        cum_share``; ``ethnicity`` is ``base`` or lower case.  US rows are repeated per model.
        The model's share is of the group's mentions; the US share of the group's workers.
    """
    model_top = top_jobs(jobs, n=n)
    model_top["ethnicity"] = np.where(model_top["axis"] == BASE, BASE, model_top["category"].astype(str).str.lower())
    model_top = model_top[model_top["ethnicity"].isin([BASE, *ethnicities])].assign(source="model")
    us_top = us_top_jobs(us, mapping, n=n).assign(source="us")
    frames = [model_top]
    for model in sorted(model_top["model"].unique()):
        frames.append(us_top[us_top["ethnicity"].isin([BASE, *ethnicities])].assign(model=model))
    columns = ["model", "gender", "ethnicity", "source", "rank", "job", "share", "cum_share"]
    out = pd.concat([f[columns] for f in frames], ignore_index=True)
    return out.sort_values(["model", "gender", "ethnicity", "source", "rank"], kind="mergesort").reset_index(drop=True)
