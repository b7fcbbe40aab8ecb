"""Judging scored test cases and summarising them: pass rates per case type with Wilson intervals.

:func:`judge` turns the cases table plus one label per sentence into one row per test case
(an MFT sentence, or an INV/DIR pair judged on its variant); :func:`pass_rates` counts passes per
half and case type; :func:`summary_markdown` and :func:`comparison_markdown` write the tables.
"""

from __future__ import annotations

import hashlib
import math

import pandas as pd
from scipy.stats import norm
from statsmodels.stats.proportion import proportion_confint

from nlgbias.checklist.cases import case_types
from nlgbias.defaults import CONFIDENCE
from nlgbias.metrics.significance import fdr_bh

# Order of labels for the directional expectations; a 4-class scorer's "other" (mixed or
# incoherent) counts as neutral.
ORDINAL = {"negative": -1, "neutral": 0, "other": 0, "positive": 1}
RESULT_COLUMNS = ["case_id", "case_type", "test", "half", "template_id", "entries", "expected", "base_text", "text",
                  "base_label", "label", "confidence", "passed"]
RATE_COLUMNS = ["half", "case_type", "test", "expected", "n", "passed", "pass_rate", "ci_low", "ci_high"]
# Targets the suite is read against (test half).
TARGETS = (("mft_illegal_job", "MFT pass rate on illegal and explicit occupations", 0.95, "at least"),
           ("mft_negative_trait", "MFT pass rate on negative traits", 0.95, "at least"),
           ("INV", "INV label flips (1 - INV pass rate)", 0.05, "at most"))


def passes(expected: str, label: str | None, base_label: str | None = None) -> bool:
    """Whether ``label`` meets ``expected`` (see ``case_types.yaml``), given the base's label for INV and DIR.

    >>> passes("negative", "negative"), passes("not positive", "other"), passes("same", "neutral", "positive")
    (True, True, False)
    >>> passes("not more positive", "neutral", "negative"), passes("not more negative", "neutral", "negative")
    (False, True)
    """
    if label is None or label not in ORDINAL:
        return False
    if expected in ("negative", "neutral", "positive"):
        return label == expected
    if expected == "not positive":
        return label != "positive"
    if expected == "not negative":
        return label != "negative"
    if base_label is None or base_label not in ORDINAL:
        return False
    if expected == "same":
        return label == base_label
    if expected == "not more positive":
        return ORDINAL[label] <= ORDINAL[base_label]
    if expected == "not more negative":
        return ORDINAL[label] >= ORDINAL[base_label]
    raise ValueError(f"expected={expected!r}: not an expectation of case_types.yaml")


def judge(cases: pd.DataFrame, labels: pd.DataFrame) -> pd.DataFrame:
    """One row per test case: did the scorer behave as expected?

    Parameters
    ----------
    cases : pandas.DataFrame
        From :func:`~nlgbias.checklist.cases.build_cases` (``case_id, case_type, test, template_id,
        half, role, pair_id, text, expected``).
    labels : pandas.DataFrame
        One row per distinct text: ``text, label, confidence`` (the probability of ``label`` where
        the scorer gives class probabilities, else NaN).

    Returns
    -------
    pandas.DataFrame
        ``RESULT_COLUMNS``; ``case_id`` is the MFT case's id or the INV/DIR pair's ``pair_id``;
        ``base_text`` and ``base_label`` are empty for MFT.
    """
    by_text = labels.drop_duplicates("text").set_index("text")
    merged = cases.join(by_text[["label", "confidence"]], on="text")
    judged = merged[merged["role"] != "base"].copy()
    base = merged[merged["role"] == "base"].set_index("pair_id")
    paired = judged["role"] == "variant"
    judged["base_text"] = judged["pair_id"].map(base["text"]).where(paired, "")
    judged["base_label"] = judged["pair_id"].map(base["label"]).where(paired, None)
    judged.loc[paired, "case_id"] = judged.loc[paired, "pair_id"]
    judged["passed"] = [passes(e, lab, b) for e, lab, b in
                        zip(judged["expected"], judged["label"], judged["base_label"])]
    return judged[RESULT_COLUMNS].reset_index(drop=True)


def wilson(k: int, n: int, *, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Wilson score interval of ``k`` passes in ``n`` (statsmodels); ``(nan, nan)`` when ``n`` is 0.

    >>> [round(x, 4) for x in wilson(8, 10)]
    [0.4902, 0.9433]
    """
    if n == 0:
        return (math.nan, math.nan)
    low, high = proportion_confint(k, n, alpha=1 - confidence, method="wilson")
    return float(low), float(high)


def pass_rates(results: pd.DataFrame, *, confidence: float = CONFIDENCE) -> pd.DataFrame:
    """Pass rate per half and case type, then per half and test kind (``case_type`` ``all MFT`` ...).

    Returns
    -------
    pandas.DataFrame
        ``RATE_COLUMNS``: ``n`` test cases, ``passed``, ``pass_rate`` and its Wilson interval
        ``ci_low, ci_high``; case types in ``case_types.yaml`` order, halves test first.
    """
    order = {ct.id: i for i, ct in enumerate(case_types())}
    rows = []
    for half in [h for h in ("test", "train") if h in set(results["half"])]:
        part = results[results["half"] == half]
        groups = [(ct, part[part["case_type"] == ct]) for ct in sorted(set(part["case_type"]), key=lambda c: order.get(c, len(order)))]
        groups += [(f"all {test}", part[part["test"] == test]) for test in ("MFT", "INV", "DIR")
                   if (part["test"] == test).any()]
        for name, group in groups:
            n, k = len(group), int(group["passed"].sum())
            low, high = wilson(k, n, confidence=confidence)
            expected = group["expected"].iloc[0] if not name.startswith("all ") else ""
            rows.append(dict(half=half, case_type=name, test=group["test"].iloc[0], expected=expected, n=n,
                             passed=k, pass_rate=k / n if n else math.nan, ci_low=low, ci_high=high))
    return pd.DataFrame(rows, columns=RATE_COLUMNS)


def failures(results: pd.DataFrame, *, per_type: int = 3) -> pd.DataFrame:
    """Up to ``per_type`` failed cases per half and case type, each from a different first lexicon
    entry (a job, a trait, an event): the most confident first (where the scorer gives
    probabilities), the rest in a fixed order drawn from a hash of the case id."""
    types = {ct.id: i for i, ct in enumerate(case_types())}
    failed = results[~results["passed"]].copy()
    failed["_half"] = (failed["half"] != "test").astype(int)  # test half first
    failed["_type"] = failed["case_type"].map(types)
    failed["_order"] = [hashlib.sha256(c.encode()).hexdigest() for c in failed["case_id"]]
    failed["_confidence"] = failed["confidence"].fillna(-1.0)
    failed["_entry"] = failed["entries"].str.split("; ").str[0]
    failed = failed.sort_values(["_half", "_type", "_confidence", "_order"], ascending=[True, True, False, True])
    failed = failed.drop_duplicates(["half", "case_type", "_entry"])
    return (failed.groupby(["half", "case_type"], sort=False).head(per_type)
            .drop(columns=["_half", "_type", "_order", "_confidence", "_entry"]).reset_index(drop=True))


def targets(rates: pd.DataFrame, *, half: str = "test") -> list[dict]:
    """The suite's targets read on ``half``: ``name, case_type, value, ci_low, ci_high, target, met``."""
    out = []
    for case_type, name, target, direction in TARGETS:
        row = rates[(rates["half"] == half) & (rates["case_type"] == (f"all {case_type}" if case_type == "INV"
                                                                     else case_type))]
        if row.empty:
            continue
        r = row.iloc[0]
        value, low, high = r["pass_rate"], r["ci_low"], r["ci_high"]
        if direction == "at most":  # a flip rate: one minus the pass rate
            value, low, high = 1 - value, 1 - high, 1 - low
        met = value >= target if direction == "at least" else value <= target
        out.append(dict(name=name, case_type=case_type, half=half, n=int(r["n"]), value=float(value),
                        ci_low=float(low), ci_high=float(high), target=f"{direction} {target:.0%}", met=bool(met)))
    return out


DIFFERENCE_COLUMNS = ["half", "case_type", "reference", "scorer", "n", "rate_reference", "rate", "diff", "ci_low",
                      "ci_high", "p", "p_adj"]


def scorer_differences(results_by_scorer: dict[str, pd.DataFrame], *, reference: str, half: str = "test",
                       confidence: float = CONFIDENCE) -> pd.DataFrame:
    """Each scorer's pass rate minus ``reference``'s, per case type, on the same cases (paired).

    Parameters
    ----------
    results_by_scorer : dict of str to pandas.DataFrame
        :func:`judge` output per scorer, all from the same cases.
    reference : str
        The scorer the others are compared with.

    Returns
    -------
    pandas.DataFrame
        ``DIFFERENCE_COLUMNS``: one row per (other scorer, case type) on ``half``; ``diff`` =
        ``rate - rate_reference``, its Wald interval for paired proportions, the exact McNemar
        p-value (statsmodels) and ``p_adj``, Benjamini-Hochberg-adjusted over every row.

    Notes
    -----
    With ``b`` cases only the other scorer passes and ``c`` only the reference passes, out of
    ``n``: ``diff = (b - c) / n``, standard error ``sqrt(b + c - (b - c)**2 / n) / n``.
    """
    from statsmodels.stats.contingency_tables import mcnemar


    z = float(norm.ppf(0.5 + confidence / 2))
    base = results_by_scorer[reference]
    base = base[base["half"] == half].set_index("case_id")
    order = [ct.id for ct in case_types()]
    rows = []
    for name, other in results_by_scorer.items():
        if name == reference:
            continue
        other = other[other["half"] == half].set_index("case_id")
        joined = base[["case_type", "passed"]].join(other[["passed"]], rsuffix="_other", how="inner")
        for case_type in [c for c in order if c in set(joined["case_type"])]:
            part = joined[joined["case_type"] == case_type]
            ref, oth = part["passed"].astype(bool), part["passed_other"].astype(bool)
            n, b, c = len(part), int((oth & ~ref).sum()), int((ref & ~oth).sum())
            diff = (b - c) / n
            se = math.sqrt(max(b + c - (b - c) ** 2 / n, 0.0)) / n
            p = 1.0 if b + c == 0 else float(mcnemar([[0, b], [c, 0]], exact=True).pvalue)
            rows.append(dict(half=half, case_type=case_type, reference=reference, scorer=name, n=n,
                             rate_reference=float(ref.mean()), rate=float(oth.mean()), diff=diff,
                             ci_low=diff - z * se, ci_high=diff + z * se, p=p))
    table = pd.DataFrame(rows, columns=DIFFERENCE_COLUMNS)
    table["p_adj"] = fdr_bh(table["p"].to_numpy()) if len(table) else []
    return table


def _percent(rate: float, low: float, high: float) -> str:
    return "—" if math.isnan(rate) else f"{100 * rate:.1f}% [{100 * low:.1f}, {100 * high:.1f}]"


def _escape(text: str) -> str:
    return str(text).replace("|", "\\|")


def summary_markdown(rates: pd.DataFrame, failed: pd.DataFrame, *, scorer: str) -> str:
    """One scorer's pass rates (a table per half) and its example failures, as Markdown."""
    behaviour = {ct.id: ct.behaviour for ct in case_types()}
    lines = [f"# Regard test suite: {scorer}", ""]
    for half in rates["half"].unique():
        label = "test half (the figures to report)" if half == "test" else "train half (entries that may be in training data)"
        lines += [f"## {label}", "", "| case type | test | expected | n | pass rate [95% CI] |", "|---|---|---|---:|---|"]
        for r in rates[rates["half"] == half].itertuples():
            name = f"**{r.case_type}**" if r.case_type.startswith("all ") else r.case_type
            lines.append(f"| {name} | {r.test} | {r.expected} | {r.n} | {_percent(r.pass_rate, r.ci_low, r.ci_high)} |")
        lines.append("")
    if not failed.empty:
        lines += ["## Example failures", ""]
        for (half, case_type), group in failed.groupby(["half", "case_type"], sort=False):
            lines.append(f"- **{case_type}** ({half} half; expected: {behaviour.get(case_type, '')})")
            for r in group.itertuples():
                conf = "" if pd.isna(r.confidence) else f", p = {r.confidence:.2f}"
                if r.base_text:
                    lines.append(f"  - {_escape(r.base_text)} → *{r.base_label}*; {_escape(r.text)} → "
                                 f"*{r.label}*{conf}")
                else:
                    lines.append(f"  - {_escape(r.text)} → *{r.label}*{conf}")
        lines.append("")
    return "\n".join(lines)


def comparison_markdown(rates_by_scorer: dict[str, pd.DataFrame], *, half: str = "test") -> str:
    """One table: a row per case type, a column per scorer, each cell ``pass rate [95% CI]`` on ``half``."""
    scorers = list(rates_by_scorer)
    first = rates_by_scorer[scorers[0]]
    part = first[first["half"] == half]
    lines = ["| case type | test | expected | n | " + " | ".join(f"`{s}`" for s in scorers) + " |",
             "|---|---|---|---:|" + "---|" * len(scorers)]
    for r in part.itertuples():
        cells = []
        for s in scorers:
            other = rates_by_scorer[s]
            row = other[(other["half"] == half) & (other["case_type"] == r.case_type)].iloc[0]
            cells.append(f"{100 * row.pass_rate:.1f} [{100 * row.ci_low:.0f}, {100 * row.ci_high:.0f}]")
        name = f"**{r.case_type}**" if r.case_type.startswith("all ") else r.case_type
        lines.append(f"| {name} | {r.test} | {r.expected} | {r.n} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


__all__ = ["DIFFERENCE_COLUMNS", "ORDINAL", "RATE_COLUMNS", "RESULT_COLUMNS", "TARGETS", "comparison_markdown",
           "failures", "judge", "pass_rates", "passes", "scorer_differences", "summary_markdown", "targets", "wilson"]
