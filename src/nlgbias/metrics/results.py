"""The metrics of a run, computed once and read many ways (report, JSON, CSV).

``compute_metrics(scored, ...)`` returns a :class:`Results` with three tables:

``shares``
    per (model, context, scorer, group, label): ``n, k, share, ci_low, ci_high, small_n``
    and ``n_empty`` (samples whose continuation was empty; they are counted, not dropped).
``gaps``
    per (model, context, scorer, label, group pair): the difference in share with its CI,
    the exact permutation p-value, ``p_adj`` and ``mde`` (the smallest gap the comparison detects
    with 80% power at its n, see :mod:`nlgbias.metrics.power`).
``model_gaps``
    per (context, scorer, group, label, model pair), when a run has several models.

``p_adj`` is Benjamini-Hochberg over every comparison in ``gaps`` and ``model_gaps`` together;
a run with several models adds its ``gap_differences`` (:mod:`nlgbias.metrics.gap_differences`)
to the same family (:func:`adjust_family`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from nlgbias.defaults import CONFIDENCE, INFERENCE_UNIT, MIN_N, N_BOOT
from nlgbias.metrics.power import FDR, POWER, family_alpha, gap_difference_mde_column, mde_column
from nlgbias.metrics.shares import differences, group_shares, unit_counts
from nlgbias.metrics.significance import fdr_bh
from nlgbias.store.export import write_csv, write_json

METRICS_FILE = "metrics.json"
MODEL_COLUMNS = ("model", "model_a", "model_b")  # the columns that name a model
MODELS_COLUMNS = ("name", "model", "backend", "fingerprint")  # models.csv: display name -> full --model value


@dataclass
class Results:
    """Named tables of a run's metrics plus ``meta`` (methods, settings, column lists).

    ``shares``, ``gaps`` and ``model_gaps`` are the label-share analysis; other analyses add
    their own tables (``occupation_gini``, ``pronoun_divergence``, ...).  A missing table reads
    as an empty DataFrame.
    """

    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    meta: dict = field(default_factory=dict)

    def table(self, name: str) -> pd.DataFrame:
        """The table called ``name`` (empty if this run has none)."""
        return self.tables.get(name, pd.DataFrame())

    @property
    def shares(self) -> pd.DataFrame:
        return self.table("shares")

    @property
    def gaps(self) -> pd.DataFrame:
        return self.table("gaps")

    @property
    def model_gaps(self) -> pd.DataFrame:
        return self.table("model_gaps")

    def merged(self, other: "Results") -> "Results":
        """This run's tables and meta plus another analysis's (its names must be new)."""
        clash = set(self.tables) & set(other.tables)
        if clash:
            raise ValueError(f"Results.merged: tables {sorted(clash)} exist in both")
        meta = {**self.meta, **{k: v for k, v in other.meta.items() if k != "columns"}}
        meta["columns"] = {**self.meta.get("columns", {}), **other.meta.get("columns", {})}
        return Results({**self.tables, **other.tables}, meta)

    def to_dict(self) -> dict:
        meta = {**self.meta, "columns": {name: list(t.columns) for name, t in self.tables.items()}}
        return {"meta": meta, **{name: t.to_dict(orient="records") for name, t in self.tables.items()}}

    def write(self, folder: str | Path) -> list[Path]:
        """Write ``metrics.json`` and one CSV per table into ``folder``."""
        folder = Path(folder)
        paths = [write_json(folder / METRICS_FILE, self.to_dict())]
        for name, table in self.tables.items():
            paths.append(write_csv(folder / f"{name}.csv", table))
        return paths

    @classmethod
    def read(cls, folder: str | Path) -> "Results":
        """Read what :meth:`write` wrote (from ``metrics.json``)."""
        data = json.loads((Path(folder) / METRICS_FILE).read_text(encoding="utf-8"))
        tables = {}
        for name, columns in data["meta"]["columns"].items():
            table = pd.DataFrame.from_records(data[name], columns=columns)
            tables[name] = table.astype({c: float for c in table.columns if c in FLOAT_COLUMNS})
        return cls(tables, data["meta"])


FLOAT_COLUMNS = {"share", "ci_low", "ci_high", "share_a", "share_b", "diff", "p", "p_adj", "mde", "n_units", "icc",
                 "deff", "n_eff", "units_a", "units_b", "units", "df", "p_fixed"}


def compute_metrics(scored: pd.DataFrame, *, comparisons: Sequence[tuple[str, str]],
                    labels: Sequence[str] = ("negative", "neutral", "positive"),
                    gap_labels: Sequence[str] = ("negative", "positive"),
                    n_boot: int = N_BOOT, confidence: float = CONFIDENCE, seed: int = 0,
                    min_n: int = MIN_N, level: str = INFERENCE_UNIT) -> Results:
    """Shares, group gaps and model gaps of a scored run.

    Parameters
    ----------
    scored : pandas.DataFrame
        One row per (generation, scorer): ``model, context, scorer, group, label``,
        ``is_empty`` (bool, the continuation was empty) and ``template_id`` (what samples are
        nested in; without it every sample counts as independent).
    comparisons : sequence of (str, str)
        Group pairs from the suite, e.g. ``[("man", "woman"), ("Black", "White")]``.
    labels : sequence of str
        Labels reported in every cell.
    gap_labels : sequence of str
        Labels whose share differences are tested.
    n_boot, confidence, seed, min_n, level
        See :func:`~nlgbias.metrics.shares.group_shares`; ``level`` is the unit of inference,
        ``prompt`` or ``sample``.

    Returns
    -------
    Results
    """
    units = unit_counts(scored, labels)  # per-template counts, once for the shares and the gaps
    shares = group_shares(scored, labels=labels, n_boot=n_boot, confidence=confidence, seed=seed, min_n=min_n,
                          level=level, units=units)
    empties = (scored.groupby(["model", "context", "scorer", "group"], sort=False)["is_empty"].sum()
               .rename("n_empty").reset_index())
    shares = shares.merge(empties, on=["model", "context", "scorer", "group"], how="left")
    shares["n_empty"] = shares["n_empty"].fillna(0).astype(int)
    level = level if units is not None else "sample"
    options: dict[str, Any] = dict(labels=gap_labels, n_boot=n_boot, confidence=confidence, seed=seed, min_n=min_n,
                                   units=units, level=level)
    gaps = differences(shares, column="group", pairs=comparisons, within=["model", "context", "scorer"], **options)
    models = list(dict.fromkeys(scored["model"]))
    model_gaps = differences(shares, column="model", pairs=list(combinations(models, 2)),
                             within=["context", "scorer", "group"], **options)
    meta = {
        **methods(level, confidence=confidence, n_boot=n_boot), "unit": level,
        "correction": "", "mde": "",  # set by adjust_family
        "confidence": confidence, "n_boot": n_boot, "seed": seed, "min_n": min_n,
        "labels": list(labels), "gap_labels": list(gap_labels), "comparisons": [list(c) for c in comparisons],
        "models": models, "n_comparisons": 0,
    }
    results = adjust_family(Results({"shares": shares, "gaps": gaps, "model_gaps": model_gaps}, meta),
                            ["gaps", "model_gaps"])
    results.meta["columns"] = {name: list(t.columns) for name, t in results.tables.items()}
    return results


def methods(level: str, *, confidence: float, n_boot: int) -> dict[str, str]:
    """The ``ci`` and ``test`` lines of ``meta`` for a level of inference (``prompt`` or ``sample``)."""
    if level == "prompt":
        return {"ci": f"{confidence:.0%} prompt-level intervals: samples are nested in templates (or prompts); shares "
                      "Wilson at the effective n with a t quantile on templates - 1 degrees of freedom; gaps "
                      "cluster-robust t intervals, paired by template where groups share templates",
                "test": "prompt-level t test of the gap (templates treated as a sample of templates); p_fixed: exact "
                        "stratified permutation test conditional on the templates"}
    return {"ci": f"{confidence:.0%} sample-level percentile bootstrap, {n_boot} replicates, resampled within each "
                  "cell (Wilson or Newcombe at 0/n and n/n); every sample counted as independent",
            "test": "sample-level exact two-sided permutation test of the difference in shares (hypergeometric null)"}


def adjust_family(results: Results, names: Sequence[str]) -> Results:
    """Adjust the comparisons of the tables ``names`` together: one Benjamini-Hochberg family.

    Each table needs a ``p`` column; ``p_adj`` (BH over every row of every table named) and
    ``mde`` (at the Bonferroni level FDR / m, m the family's size; a gap-differences table,
    recognised by its ``n_a1`` column, gets the MDE of a difference in differences) are set or
    replaced, and ``meta`` gets ``correction``, ``mde`` and ``n_comparisons``.  The analyses of a
    run whose registry entries declare a ``family`` are adjusted together this way.
    """

    names = [name for name in names if name in results.tables]
    tables = {name: results.tables[name].copy() for name in names}
    p_values = np.concatenate([tables[name]["p"].to_numpy(float) for name in names] or [np.empty(0)])
    adjusted = fdr_bh(p_values)
    n_comparisons = int(np.sum(~np.isnan(p_values)))  # BH's m: a comparison without a p is not tested
    alpha = family_alpha(n_comparisons)
    start = 0
    for table in tables.values():
        table["p_adj"] = adjusted[start: start + len(table)]
        start += len(table)
        table["mde"] = (gap_difference_mde_column if "n_a1" in table else mde_column)(table, alpha=alpha)
    meta = dict(results.meta)
    listed = " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)
    meta["correction"] = f"Benjamini-Hochberg over all {n_comparisons} comparisons in {listed}"
    meta["mde"] = (f"minimum detectable effect: the smallest gap from the pooled share towards 50% that a two-sided "
                   f"test at {alpha:.3g} (FDR {FDR:g} / {n_comparisons}, Bonferroni) finds with {POWER:.0%} power "
                   f"(arcsine normal approximation plus a continuity correction); empty when no gap can be found")
    meta["n_comparisons"] = int(n_comparisons)
    return Results({**results.tables, **tables}, meta)


# -- display names (nlgbias.models.names): renaming happens on finished tables ------------------

def rename_models(table: pd.DataFrame, names: Mapping[str, str]) -> pd.DataFrame:
    """``table`` with the model columns (``model``, ``model_a``, ``model_b``) mapped through ``names``."""
    columns = [c for c in MODEL_COLUMNS if c in table.columns]
    if not columns:
        return table
    return table.assign(**{c: table[c].map(lambda v: names.get(v, v)) for c in columns})


def rename_results(results: Results, names: Mapping[str, str]) -> Results:
    """A :class:`Results` with every table's model columns and ``meta['models']`` renamed."""
    meta = dict(results.meta)
    if isinstance(meta.get("models"), list):
        meta["models"] = [names.get(m, m) for m in meta["models"]]
    return Results({name: rename_models(table, names) for name, table in results.tables.items()}, meta)


def named_results(results: Results, names: Mapping[str, str], models: Sequence[dict]) -> Results:
    """``results`` (computed on the full ``--model`` values, which seed the statistics) renamed to
    the display ``names``, with the ``models`` table (``MODELS_COLUMNS``: display name -> full
    value, backend, fingerprint) built from the manifest's model entries ``models``."""
    return rename_results(results, names).merged(
        Results({"models": pd.DataFrame(list(models), columns=list(MODELS_COLUMNS))}, {}))
