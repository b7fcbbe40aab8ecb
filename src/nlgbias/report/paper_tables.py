"""The tables of a paper export, format-free: shares, group gaps, model gaps, gap differences, models.

In: a run's (or a combined report part's) :class:`~nlgbias.metrics.results.Results` and manifest,
and an optional :class:`RowFilter` (scorers, contexts, significant comparisons only).
Out: :class:`Table` objects (header, alignment, rows of cell text, notes), which
:mod:`nlgbias.report.latex` and :func:`nlgbias.report.export.markdown` render.

Cells are text as printed: shares in percent, gaps in percentage points, CIs as ``[low, high]``,
a mark after each difference from its adjusted p (:data:`MARKS`), ``†`` after an n under the
run's ``min_n`` (:data:`SMALL_N_MARK`), the MDE in points (``none``: no gap is detectable at that n).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import pandas as pd

from nlgbias.errors import InputError, option
from nlgbias.metrics.power import FDR
from nlgbias.metrics.results import Results
from nlgbias.report.sections import ci_label, format_p

MARKS = ((0.001, "***"), (0.01, "**"), (0.05, "*"))  # adjusted p under the level -> the mark
SMALL_N_MARK = "†"
COMPARISONS = ("gaps", "model_gaps", "gap_differences")


@dataclass(frozen=True)
class Table:
    """A format-free table: header, alignment (``l``/``r`` per column), rows of cell text.

    ``notes``: sentences under the table; ``marks``: the legend of the significance marks goes
    under it too.  LaTeX layout hints: the first ``blocks`` columns become a heading row where
    their values change (instead of repeating in every row), and columns in ``wrap`` may break
    over lines; the others keep their natural width.
    """

    name: str
    caption: str
    header: Sequence[str]
    align: str
    rows: Sequence[Sequence[str]]
    notes: str
    marks: bool = False
    blocks: int = 0
    wrap: tuple[int, ...] = ()


@dataclass(frozen=True)
class RowFilter:
    """Which rows an export keeps: ``scorers`` and ``contexts`` (empty: all), and with ``significant``
    only the comparisons with adjusted p < :data:`~nlgbias.metrics.power.FDR` (shares are kept)."""

    scorers: tuple[str, ...] = ()
    contexts: tuple[str, ...] = ()
    significant: bool = False

    def __bool__(self) -> bool:
        return bool(self.scorers or self.contexts or self.significant)

    def check(self, *results: Results) -> None:
        """One-line :class:`InputError` for a scorer or context that none of ``results`` (a run, or the
        parts of a report over several runs) has."""
        for flag, values, column in (("--export-scorer", self.scorers, "scorer"),
                                     ("--export-context", self.contexts, "context")):
            present = list(dict.fromkeys(v for r in results for t in r.tables.values() if column in t
                                         for v in t[column]))
            for value in values:
                if value not in present:
                    raise InputError(f"{option(flag, value, keyword=flag[2:].replace('-', '_') + 's', many=True)}: "
                                     f"not in this run; its {column}s: {', '.join(map(str, present)) or 'none'}")

    def apply(self, table: pd.DataFrame, *, comparison: bool) -> pd.DataFrame:
        """The rows of ``table`` this filter keeps."""
        keep = pd.Series(True, index=table.index)
        if self.scorers and "scorer" in table:
            keep &= table["scorer"].isin(self.scorers)
        if self.contexts and "context" in table:
            keep &= table["context"].isin(self.contexts)
        if self.significant and comparison:
            keep &= table["p_adj"] < FDR
        return table[keep]

    def describe(self) -> str:
        """The filter in words, for a table's notes (empty without one)."""
        parts = []
        if self.scorers:
            parts.append(f"scorer {', '.join(self.scorers)}")
        if self.contexts:
            parts.append(f"context {', '.join(self.contexts)}")
        if self.significant:
            parts.append(f"adjusted p < {FDR:g}")
        return ("Rows shown: " + "; ".join(parts) + ".") if parts else ""


ALL_ROWS = RowFilter()  # no filter: every row


def significance_mark(p_adj: float) -> str:
    """``***``, ``**``, ``*`` or ``""`` for an adjusted p-value (:data:`MARKS`).

    >>> [significance_mark(p) for p in (0.0005, 0.005, 0.03, 0.05, float("nan"))]
    ['***', '**', '*', '', '']
    """
    if p_adj is None or not math.isfinite(p_adj):
        return ""
    return next((mark for level, mark in MARKS if p_adj < level), "")


def _number(value: float, digits: int = 1, *, sign: bool = False) -> str:
    if value is None or not math.isfinite(value):
        return "–"
    return f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"


def _interval(low: float, high: float, *, scale: float = 100, sign: bool = False) -> str:
    return f"[{_number(scale * low, sign=sign)}, {_number(scale * high, sign=sign)}]"


def _mde(value) -> str:
    return "none" if value is None or pd.isna(value) else f"{100 * value:.1f}"


def _n(values: Sequence[int], small: bool) -> str:
    """``"50 / 50"`` (a gap's two cells), a gap difference's four cells as compactly as they allow,
    then :data:`SMALL_N_MARK` when a cell is under ``min_n``."""
    values = [int(v) for v in values]
    if len(values) == 4:
        a1, a2, b1, b2 = values
        text = (str(a1) if len(set(values)) == 1 else f"{a1} / {b1}" if a1 == a2 and b1 == b2
                else " / ".join(map(str, values)))
    else:
        text = " / ".join(map(str, values))
    return text + (SMALL_N_MARK if small else "")


def _run(manifest: dict) -> str:
    return str(manifest.get("run_id"))


def share_table(results: Results, manifest: dict, *, rows_of: RowFilter = ALL_ROWS) -> Table:
    """One row per (model, context, scorer, group): n, then each label's share (%) with its CI."""
    shares = rows_of.apply(results.shares, comparison=False)
    labels = list(results.meta.get("labels", dict.fromkeys(shares["label"])))
    rows = []
    for (model, context, scorer, group), cell in shares.groupby(["model", "context", "scorer", "group"], sort=False):
        by_label = cell.set_index("label")
        small = bool(cell["small_n"].any()) if "small_n" in cell else False
        row = [model, context, scorer, group, _n([cell["n"].iloc[0]], small)]
        for label in labels:
            if label in by_label.index:
                r = by_label.loc[label]
                row.append(f"{_number(100 * r['share'])} {_interval(r['ci_low'], r['ci_high'])}")
            else:
                row.append("–")
        rows.append(row)
    notes = f"CI: {results.meta.get('ci', 'bootstrap')}. {_small_n_note(results)}"
    return Table("shares", f"Label shares per group (%, {ci_label(results)}), run {_run(manifest)}",
                 ["Model", "Context", "Scorer", "Group", "n", *[f"{label} % [CI]" for label in labels]],
                 "llll" + "r" * (1 + len(labels)), rows, _with_filter(notes, rows_of), blocks=3, wrap=(3,))


def _small_n_note(results: Results) -> str:
    return f"{SMALL_N_MARK}: a cell under {results.meta.get('min_n', 30)} samples (small n)."


def _comparison_notes(results: Results, rows_of: RowFilter, shown: int, of: int, *, meta: dict | None = None) -> str:
    """CI, test, adjustment, MDE and small-n marks of a comparison table (``meta``: an analysis's own
    ``ci``/``test`` over the run's), and the filter with how many rows it kept."""
    meta = {**results.meta, **(meta or {})}
    notes = (f"CI: {meta.get('ci', 'bootstrap')}. p: {meta.get('test', 'permutation test')}. "
             f"adj. p: {results.meta.get('correction', 'Benjamini-Hochberg')}. MDE: the smallest difference "
             f"detectable with 80% power at the row's n (points; none: no difference is detectable). "
             f"{_small_n_note(results)}")
    if rows_of:
        notes += f" {shown} of {of} rows shown; p-values adjusted over every comparison of the run."
    return _with_filter(notes, rows_of)


def _with_filter(notes: str, rows_of: RowFilter) -> str:
    return f"{notes} {rows_of.describe()}".strip() if rows_of else notes


def gap_table(results: Results, manifest: dict, *, between: str = "group", rows_of: RowFilter = ALL_ROWS) -> Table:
    """One row per gap (``between="group"``: ``gaps``; ``"model"``: ``model_gaps``), in points."""
    full = results.gaps if between == "group" else results.model_gaps
    gaps = rows_of.apply(full, comparison=True)
    fixed = ["model", "context", "scorer", "label"] if between == "group" else ["context", "scorer", "group", "label"]
    a, b = f"{between}_a", f"{between}_b"
    rows = []
    for r in gaps.to_dict(orient="records"):
        rows.append([*(str(r[c]) for c in fixed), f"{r[a]} – {r[b]}",
                     _n([r["n_a"], r["n_b"]], bool(r.get("small_n", False))),
                     _number(100 * r["diff"], sign=True) + significance_mark(r["p_adj"]),
                     _interval(r["ci_low"], r["ci_high"], sign=True), format_p(r["p"]), format_p(r["p_adj"]),
                     _mde(r.get("mde"))])
    what = "Group gaps (first group minus second)" if between == "group" else "Model gaps (first model minus second)"
    return Table("gaps" if between == "group" else "model_gaps",
                 f"{what} in percentage points with {ci_label(results)}, run {_run(manifest)}",
                 [*(c.capitalize() for c in fixed), f"{between.capitalize()}s", "n", "Gap (pts)", "CI", "p",
                  "adj. p", "MDE"], "lllll" + "rrrrrr", rows,
                 _comparison_notes(results, rows_of, len(gaps), len(full)), marks=True, blocks=3, wrap=(3, 4))


def gap_difference_table(results: Results, manifest: dict, *, rows_of: RowFilter = ALL_ROWS) -> Table:
    """One row per gap difference: a group gap in one model minus the same gap in another, in points."""
    full = results.table("gap_differences")
    table = rows_of.apply(full, comparison=True)
    rows = []
    for r in table.to_dict(orient="records"):
        rows.append([str(r["context"]), str(r["scorer"]), str(r["label"]), f"{r['group_a']} – {r['group_b']}",
                     f"{r['model_a']} – {r['model_b']}",
                     _n([r["n_a1"], r["n_a2"], r["n_b1"], r["n_b2"]], bool(r.get("small_n", False))),
                     f"{_number(100 * r['gap_a'], sign=True)} / {_number(100 * r['gap_b'], sign=True)}",
                     _number(100 * r["diff"], sign=True) + significance_mark(r["p_adj"]),
                     _interval(r["ci_low"], r["ci_high"], sign=True), format_p(r["p"]), format_p(r["p_adj"]),
                     _mde(r.get("mde"))])
    meta = results.meta.get("gap_differences", {})
    notes = ("Each row: the gap (first group minus second) in the first model minus the same gap in the second "
             "model. Gaps: in each model. n: samples per cell (one number when the four cells agree; first model / "
             "second model when each model's two cells agree; else all four). "
             + _comparison_notes(results, rows_of, len(table), len(full),
                                 meta={k: meta[k] for k in ("ci", "test") if k in meta}))
    return Table("gap_differences", f"Gap differences between models in percentage points with {ci_label(results)}, "
                 f"run {_run(manifest)}",
                 ["Context", "Scorer", "Label", "Groups", "Models", "n", "Gaps (pts)", "Difference", "CI", "p",
                  "adj. p", "MDE"], "lllll" + "r" * 7, rows, notes, marks=True, blocks=3, wrap=(3, 4))


def models_table(manifest: dict) -> Table:
    """Display name -> full ``--model`` value, backend and fingerprint."""
    rows = [[m.get("name", m["model"]), m["model"], str(m.get("backend", "")), str(m.get("fingerprint", ""))[:16]]
            for m in manifest.get("models", [])]
    return Table("models", f"Models of run {_run(manifest)}", ["Name", "Model", "Backend", "Fingerprint"],
                 "llll", rows, "Name: as in every table and chart; Model: the value given to --model.", wrap=(0, 1))


def tables(results: Results, manifest: dict, *, rows_of: RowFilter = ALL_ROWS) -> list[Table]:
    """The tables to export: shares, gaps, model gaps and gap differences (several models) and models,
    where the run has them, with the rows ``rows_of`` keeps."""
    out = []
    if not results.shares.empty:
        out.append(share_table(results, manifest, rows_of=rows_of))
        out.append(gap_table(results, manifest, between="group", rows_of=rows_of))
        if not results.model_gaps.empty:
            out.append(gap_table(results, manifest, between="model", rows_of=rows_of))
        if not results.table("gap_differences").empty:
            out.append(gap_difference_table(results, manifest, rows_of=rows_of))
    out.append(models_table(manifest))
    return out


__all__ = ["ALL_ROWS", "COMPARISONS", "MARKS", "SMALL_N_MARK", "RowFilter", "Table", "gap_difference_table", "gap_table",
           "models_table", "share_table", "significance_mark", "tables"]
