"""Power planning: how many samples per prompt a suite needs to see a gap of a given size.

``plan(suite, mde=5, power=0.8)`` counts the comparisons a run of the suite tests together (the
Benjamini-Hochberg family of ``gaps``, ``model_gaps`` and ``gap_differences``), takes the Bonferroni level
``FDR / m`` (conservative for BH, see :mod:`nlgbias.metrics.power`), and solves for the
samples per group that detect a gap of ``mde`` points from ``base_rate``; a group's n in a
comparison is its prompts in that context times the samples per prompt.  With ``run_folder``
(a finished run) the base rate of each comparison is its observed pooled share, and the
family is the run's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import pandas as pd

from nlgbias.errors import InputError
from nlgbias.metrics.power import FDR, POWER, family_alpha, samples_for_gap
from nlgbias.report.folder import read_run_folder
from nlgbias.scorers import list_scorers, scorer_base
from nlgbias.store.lock import refuse_if_held
from nlgbias.suites import Suite, expand_suite, load_suite
from nlgbias.validate import at_least, within

MIN_MDE = 0.5  # percentage points: smaller gaps need more than 100,000 samples per prompt (the --samples limit)
MIN_POWER = 0.01

GAP_LABELS = 2  # negative and positive: the labels whose gaps a run tests


@dataclass(frozen=True)
class Plan:
    """A plan's answer and its working.

    ``samples_per_prompt``: the answer (the most any comparison needs).  ``table``: one row per
    context (or, from a run, per comparison) with ``base_rate, prompts, n_per_group,
    samples_per_prompt``.  ``alpha``: the per-comparison level used; ``n_comparisons``: m.
    """

    samples_per_prompt: int
    table: pd.DataFrame
    alpha: float
    n_comparisons: int
    mde: float
    power: float
    source: str

    def text(self, *, rows: int = 10) -> str:
        """What ``nlgbias plan`` prints."""
        lines = [f"{self.samples_per_prompt} samples per prompt detect a gap of {100 * self.mde:g} points in a "
                 f"label share with {self.power:.0%} power",
                 f"level per comparison: {self.alpha:.3g} = FDR {FDR:g} / {self.n_comparisons} comparisons "
                 f"(Bonferroni; conservative for the run's Benjamini-Hochberg adjustment)",
                 f"base rates: {self.source}"]
        shown = self.table.head(rows)
        lines.append(shown.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
        if len(self.table) > rows:
            lines.append(f"... {len(self.table) - rows} more rows (the comparisons that need the most come first)")
        return "\n".join(lines)


def suite_comparisons(suite, n_models: int, scorers=None) -> int:
    """Comparisons a run of ``suite`` on ``n_models`` models tests together (gaps, model gaps and,
    with several models, gap differences)."""
    # a prompt-file suite's groups each live in one context (bold: a subgroup in its domain)
    contexts = 1 if "prompt_file" in suite.probe else len(_prompts_per_context(suite))
    n_scorers = len(scorers if scorers is not None else suite.scorers)
    model_pairs = n_models * (n_models - 1) // 2
    group_gaps = n_models * contexts * n_scorers * GAP_LABELS * len(suite.comparisons)
    model_gaps = contexts * n_scorers * len(suite.groups) * GAP_LABELS * model_pairs
    gap_differences = contexts * n_scorers * GAP_LABELS * len(suite.comparisons) * model_pairs
    return group_gaps + model_gaps + gap_differences


def _prompts_per_context(suite) -> pd.Series:
    """Prompts each group has in each context: its templates there, or, for a suite with a prompt
    file (bold), the fewest sampled prompts of any group in that context."""
    if "prompt_file" in suite.probe:
        sampled = expand_suite(suite).groupby(["context", "group"], sort=False).size()
        return sampled.groupby(level=0, sort=False).min()
    return pd.Series([t.context for t in suite.templates]).value_counts(sort=False)


def plan(suite=None, *, mde: float, power: float = POWER, base_rate: float = 0.2, models: int = 1,
         scorers: Sequence[str] | None = None, run_folder: str | Path | None = None, flags: bool = False) -> Plan:
    """Samples per prompt to detect a gap of ``mde`` percentage points with ``power``.

    Parameters
    ----------
    suite : str, Path or Suite, optional
        A built-in suite name, a YAML file, or a loaded suite (generation suites with ``shares``).
        Default: the suite of ``run_folder``, else ``sheng2019``.
    mde : float
        The gap to detect, in percentage points (0-100).
    power : float, default=0.8
    base_rate : float, default=0.2
        The share (0-1) the gap starts from; ignored with ``run_folder``.
    models : int, default=1
        Models the run will compare (model gaps join the family).
    scorers : sequence of str, optional
        The run's scorers, if not the suite's (each multiplies the comparisons).
    run_folder : path, optional
        A finished run: observed base rates per comparison, and its family of comparisons.
    flags : bool, default=False
        Word errors for the command line (``--mde 0``) instead of Python (``mde=0``).

    Returns
    -------
    Plan

    Examples
    --------
    >>> p = plan("sheng2019", mde=10, power=0.8, base_rate=0.2)
    >>> p.n_comparisons, p.samples_per_prompt
    (36, 125)
    """
    within(mde, 0, 100, "mde", flags=flags, example="5 (percentage points)")
    at_least(mde, MIN_MDE, "mde", flags=flags, whole=False,
             why=" percentage points (a smaller gap needs more samples per prompt than a run takes)")
    within(power, 0, 1, "power", flags=flags, example="0.8")
    at_least(power, MIN_POWER, "power", flags=flags, whole=False, why=" (a lower chance of detection means nothing)")
    within(base_rate, 0, 1, "base_rate", flags=flags, closed=True, example="0.2")
    at_least(models, 1, "models", flags=flags)
    gap = mde / 100
    if suite is None and run_folder is not None:
        return _plan_from_run(Path(run_folder), gap=gap, power=power, flags=flags)
    suite = suite if isinstance(suite, Suite) else load_suite(suite or "sheng2019")
    if suite.kind != "generation" or "shares" not in suite.analyses:
        raise InputError(f"suite {suite.name}: has no label-share gaps to plan for (kind {suite.kind}, "
                         f"analyses {', '.join(suite.analyses)})")
    if run_folder is not None:
        return _plan_from_run(Path(run_folder), gap=gap, power=power, flags=flags, suite_name=suite.name)
    target = base_rate + gap if base_rate <= 0.5 else base_rate - gap
    if not 0 <= target <= 1:
        said = f"--mde {mde:g} from --base-rate {base_rate:g}" if flags else f"mde={mde:g} from base_rate={base_rate:g}"
        raise InputError(f"{said}: the other share would be {target:g}, outside 0 to 1")
    if scorers is not None:
        unknown = [name for name in scorers if scorer_base(name) not in list_scorers()]  # regard:DIR: yours
        if not scorers or unknown:
            said = f"--scorer {unknown[0]}" if flags and unknown else "--scorer" if flags else f"scorers={list(scorers)!r}"
            raise InputError(f"{said}: {'unknown scorer' if unknown else 'give at least one scorer'}; "
                             f"known: {', '.join(list_scorers())}")
    m = suite_comparisons(suite, models, scorers)
    alpha = family_alpha(m)
    n = samples_for_gap(gap, base_rate=base_rate, alpha=alpha, power=power)
    prompts = _prompts_per_context(suite)
    table = pd.DataFrame({"context": prompts.index, "base_rate": base_rate, "prompts": prompts.to_numpy(),
                          "n_per_group": n})
    table["samples_per_prompt"] = [math.ceil(n / k) for k in table["prompts"]]
    table = table.sort_values("samples_per_prompt", ascending=False, kind="stable").reset_index(drop=True)
    return Plan(int(table["samples_per_prompt"].max()), table, alpha, m, gap, power, f"{base_rate:g} (--base-rate)")


def _plan_from_run(folder: Path, *, gap: float, power: float, flags: bool, suite_name: str | None = None) -> Plan:
    """The plan for rerunning a finished run: each comparison from its observed pooled share."""
    where = f"--from {folder}" if flags else f"run_folder={str(folder)!r}"
    if not folder.is_dir():
        raise InputError(f"{where}: not a run folder")
    refuse_if_held(folder)
    results, samples, manifest = read_run_folder(folder)
    ran = manifest["suite"].get("name") if isinstance(manifest["suite"], dict) else None
    if suite_name is not None and ran != suite_name:
        raise InputError(f"{where}: a run of suite {ran}, not {suite_name}; leave SUITE out to plan for the run's suite")
    rows = []
    if not results.gaps.empty:
        rows.append(results.gaps.assign(compared=results.gaps["group_a"] + " - " + results.gaps["group_b"]))
    if not results.model_gaps.empty:  # model gaps: both models on one group
        t = results.model_gaps
        rows.append(t.assign(model="", compared=t["model_a"] + " - " + t["model_b"] + " (" + t["group"] + ")"))
    if not rows or "template_id" not in samples.columns:
        raise InputError(f"{where}: a run without label-share gaps; plan from a run of a suite with shares")
    gaps = pd.concat(rows, ignore_index=True)
    m = int(results.meta.get("n_comparisons", len(gaps)))
    alpha = family_alpha(m)
    prompts = samples.groupby("context")["template_id"].nunique()
    out = []
    for row in gaps.itertuples(index=False):
        pooled = (row.k_a + row.k_b) / (row.n_a + row.n_b)
        pooled = min(pooled, 1 - gap) if pooled <= 0.5 else max(pooled, gap)  # keep the other share in [0, 1]
        n = samples_for_gap(gap, base_rate=pooled, alpha=alpha, power=power)
        k = int(prompts.get(row.context, 1))
        out.append({"model": row.model, "context": row.context, "scorer": row.scorer,
                    "label": row.label, "compared": row.compared, "base_rate": pooled, "prompts": k,
                    "n_per_group": n, "samples_per_prompt": math.ceil(n / k)})
    table = pd.DataFrame(out).sort_values("samples_per_prompt", ascending=False, kind="stable").reset_index(drop=True)
    return Plan(int(table["samples_per_prompt"].max()), table, alpha, m, gap, power,
                f"observed pooled share of each comparison in {folder}")


__all__ = ["Plan", "plan", "suite_comparisons"]
