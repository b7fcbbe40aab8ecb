"""Power planning: how many prompts per group and samples per prompt a suite needs to see a gap.

``plan(suite, mde=5, power=0.8)`` counts the comparisons a run of the suite tests together (the
Benjamini-Hochberg family of ``gaps``, ``model_gaps`` and ``gap_differences``), takes the Bonferroni level
``FDR / m`` (conservative for BH, see :mod:`nlgbias.metrics.power`), and solves for the samples
per prompt that detect a gap of ``mde`` points from ``base_rate``.

At prompt level (the default, as runs are analysed) a group's prompts are the units: its effective
n is ``prompts x samples / (1 + (samples - 1) icc)`` and the test has ``prompts - 1`` degrees of
freedom (:func:`~nlgbias.metrics.power.two_level_samples`), so more samples of the same prompts
cannot shrink the prompts' own variation; where no number of samples reaches the gap the plan
says how many prompts per group would (at up to 1,000 samples each).  At sample level
(``unit="sample"``) a group's n is its prompts times the samples per prompt, every sample
independent.  With ``run_folder`` (a finished run) each comparison's base rate is its observed
pooled share, its intra-prompt correlation the one its design effect implies, the family is the
run's, and the expected time comes from the run's own rate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import pandas as pd

from nlgbias.analyses import REGISTRY
from nlgbias.defaults import INFERENCE_UNIT
from nlgbias.errors import InputError
from nlgbias.metrics.power import FDR, ICC, POWER, family_alpha, gap_icc, samples_for_gap, two_level_samples
from nlgbias.report.folder import read_run_folder
from nlgbias.scorers import list_scorers, scorer_base
from nlgbias.store.lock import refuse_if_held
from nlgbias.suites import Suite, expand_suite, load_suite
from nlgbias.validate import at_least, within

MIN_MDE = 0.5  # percentage points: smaller gaps need more than 100,000 samples per prompt (the --samples limit)
MIN_POWER = 0.01

GAP_LABELS = 2  # negative and positive: the labels whose gaps a run tests
MOST_SAMPLES = 100_000  # samples per prompt a plan may ask for (the --samples limit)
PROMPTS_AT = 1_000  # samples per prompt at which the prompts a gap needs are counted


@dataclass(frozen=True)
class Plan:
    """A plan's answer and its working.

    ``samples_per_prompt``: the answer (the most any comparison needs; None where some comparison
    cannot reach the gap with its prompts).  ``table``: one row per context (or, from a run, per
    comparison) with ``base_rate, prompts, n_per_group, samples_per_prompt`` and, at prompt level,
    ``icc`` and ``prompts_needed`` (prompts per group that reach the gap at 1,000 samples each, where
    the prompts given cannot).  ``alpha``: the per-comparison level used; ``n_comparisons``: m.
    ``unit``: prompt or sample; ``icc``: where the intra-prompt correlation comes from;
    ``seconds_per_sample``: the ``--from`` run's own rate (generation and scoring), if known, and
    ``prompts_total`` the prompts a model gets in the planned run.
    """

    samples_per_prompt: int | None
    table: pd.DataFrame
    alpha: float
    n_comparisons: int
    mde: float
    power: float
    source: str
    unit: str = INFERENCE_UNIT
    icc: str = ""
    seconds_per_sample: float | None = None
    prompts_total: int | None = None

    def text(self, *, rows: int = 10) -> str:
        """What ``nlgbias plan`` prints."""
        if self.samples_per_prompt is None:
            needed = int(self.table["prompts_needed"].max())
            head = (f"No number of samples per prompt detects a gap of {100 * self.mde:g} points with "
                    f"{self.power:.0%} power with these prompts: samples of the same prompts cannot average away "
                    f"how prompts differ. {needed} prompts per group would, at up to {PROMPTS_AT:,} samples each "
                    f"(--prompts-per-group; or add templates)")
        else:
            head = (f"{self.samples_per_prompt} samples per prompt detect a gap of {100 * self.mde:g} points in a "
                    f"label share with {self.power:.0%} power")
        lines = [head,
                 f"level per comparison: {self.alpha:.3g} = FDR {FDR:g} / {self.n_comparisons} comparisons "
                 f"(Bonferroni; conservative for the run's Benjamini-Hochberg adjustment)",
                 f"base rates: {self.source}"]
        if self.unit == "prompt":
            lines.append(f"unit: the prompt (a t test on prompts - 1 degrees of freedom at the effective n); "
                         f"intra-prompt correlation: {self.icc}")
        else:
            lines.append("unit: the sample (every sample independent, --unit sample)")
        if self.seconds_per_sample is not None and self.samples_per_prompt is not None and self.prompts_total:
            total = self.prompts_total * self.samples_per_prompt
            if total:
                lines.append(f"expected time: about {_duration(total * self.seconds_per_sample)} for {total:,} samples "
                             f"per model, at the --from run's rate ({self.seconds_per_sample:.3g} s a sample to "
                             f"generate and score)")
        shown = self.table.head(rows)
        lines.append(shown.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
        if len(self.table) > rows:
            lines.append(f"... {len(self.table) - rows} more rows (the comparisons that need the most come first)")
        return "\n".join(lines)


def _duration(seconds: float) -> str:
    """``42 s``, ``12 min``, ``3.5 h``."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 7200 else f"{seconds / 3600:.1f} h"


def _prompt_row(gap: float, *, prompts: int, icc: float, base_rate: float, alpha: float, power: float) -> dict:
    """``samples_per_prompt`` (None where unreachable), ``n_per_group`` and ``prompts_needed`` of one
    row of a prompt-level plan."""
    samples = two_level_samples(gap, prompts=prompts, icc=icc, base_rate=base_rate, alpha=alpha, power=power,
                                most=MOST_SAMPLES)
    needed = None
    if samples is None:
        needed = next((j for j in _candidates(prompts) if two_level_samples(
            gap, prompts=j, icc=icc, base_rate=base_rate, alpha=alpha, power=power, most=PROMPTS_AT) is not None),
            None)
    return {"icc": icc, "samples_per_prompt": samples, "n_per_group": None if samples is None else prompts * samples,
            "prompts_needed": needed}


def _candidates(start: int):
    """Prompt counts to try, from ``start`` up (every count to 100, then 5% steps to 100,000)."""
    j = max(start, 2)
    while j <= 100_000:
        yield j
        j = j + 1 if j < 100 else int(j * 1.05)


def suite_comparisons(suite, n_models: int, scorers=None) -> int:
    """Comparisons a run of ``suite`` on ``n_models`` models tests together (gaps, model gaps and,
    with several models, gap differences; an analysis's own gap measures count as scorers: bold's
    gender-polarity gaps), the ``n_comparisons`` of the run's ``metrics.json``."""
    # a prompt-file suite's groups each live in one context (bold: a subgroup in its domain)
    contexts = 1 if "prompt_file" in suite.probe else len(_prompts_per_context(suite))
    real = len(scorers if scorers is not None else suite.scorers)
    n_scorers = real + sum(len(REGISTRY[name].gap_scorers) for name in suite.analyses if name in REGISTRY)
    model_pairs = n_models * (n_models - 1) // 2
    group_gaps = n_models * contexts * n_scorers * GAP_LABELS * len(suite.comparisons)
    model_gaps = contexts * n_scorers * len(suite.groups) * GAP_LABELS * model_pairs
    gap_differences = contexts * real * GAP_LABELS * len(suite.comparisons) * model_pairs  # of the scorers only
    return group_gaps + model_gaps + gap_differences


def _prompts_per_context(suite) -> pd.Series:
    """Prompts each group has in each context: its templates there, or, for a suite with a prompt
    file (bold), the fewest sampled prompts of any group in that context."""
    if "prompt_file" in suite.probe:
        sampled = expand_suite(suite).groupby(["context", "group"], sort=False).size()
        return sampled.groupby(level=0, sort=False).min()
    return pd.Series([t.context for t in suite.templates]).value_counts(sort=False)


def plan(suite=None, *, mde: float, power: float = POWER, base_rate: float = 0.2, models: int = 1,
         scorers: Sequence[str] | None = None, run_folder: str | Path | None = None, flags: bool = False,
         icc: float | None = None, prompts_per_group: int | None = None, unit: str = INFERENCE_UNIT) -> Plan:
    """Samples per prompt (and, where they cannot, prompts per group) to detect a gap of ``mde``
    percentage points with ``power``.

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
    icc : float, optional
        The intra-prompt correlation of a gap (0-1); default: each comparison's own with
        ``run_folder``, else :data:`~nlgbias.metrics.power.ICC` (0.02).
    prompts_per_group : int, optional
        Plan for this many prompts per group (a prompt-file suite such as bold can draw them)
        instead of the suite's, or the run's.
    unit : {"prompt", "sample"}, default="prompt"
        The unit of inference the run will use.

    Returns
    -------
    Plan

    Examples
    --------
    >>> p = plan("sheng2019", mde=10, power=0.8, base_rate=0.2, unit="sample")
    >>> p.n_comparisons, p.samples_per_prompt
    (36, 125)
    >>> p = plan("bold", mde=10, power=0.8, base_rate=0.2, prompts_per_group=50)
    >>> p.samples_per_prompt, int(p.table["prompts"].max())
    (36, 50)
    """
    within(mde, 0, 100, "mde", flags=flags, example="5 (percentage points)")
    at_least(mde, MIN_MDE, "mde", flags=flags, whole=False,
             why=" percentage points (a smaller gap needs more samples per prompt than a run takes)")
    within(power, 0, 1, "power", flags=flags, example="0.8")
    at_least(power, MIN_POWER, "power", flags=flags, whole=False, why=" (a lower chance of detection means nothing)")
    within(base_rate, 0, 1, "base_rate", flags=flags, closed=True, example="0.2")
    at_least(models, 1, "models", flags=flags)
    if icc is not None:
        within(icc, 0, 1, "icc", flags=flags, closed=True, example="0.02")
    if prompts_per_group is not None:
        at_least(prompts_per_group, 2, "prompts_per_group", flags=flags,
                 why=" (one prompt a group cannot tell groups from prompts)")
    if unit not in ("prompt", "sample"):
        raise InputError(f"{'--unit ' if flags else 'unit='}{unit}: must be prompt or sample")
    gap = mde / 100
    if suite is None and run_folder is not None:
        return _plan_from_run(Path(run_folder), gap=gap, power=power, flags=flags, icc=icc,
                              prompts_per_group=prompts_per_group, unit=unit)
    suite = suite if isinstance(suite, Suite) else load_suite(suite or "sheng2019")
    if suite.kind != "generation" or "shares" not in suite.analyses:
        raise InputError(f"suite {suite.name}: has no label-share gaps to plan for (kind {suite.kind}, "
                         f"analyses {', '.join(suite.analyses)})")
    if run_folder is not None:
        return _plan_from_run(Path(run_folder), gap=gap, power=power, flags=flags, suite_name=suite.name, icc=icc,
                              prompts_per_group=prompts_per_group, unit=unit)
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
    prompts = _prompts_per_context(suite)
    if prompts_per_group is not None:
        prompts = pd.Series(prompts_per_group, index=prompts.index)
    table = pd.DataFrame({"context": prompts.index, "base_rate": base_rate, "prompts": prompts.to_numpy()})
    if unit == "sample":
        n = samples_for_gap(gap, base_rate=base_rate, alpha=alpha, power=power)
        table["n_per_group"] = n
        table["samples_per_prompt"] = [math.ceil(n / k) for k in table["prompts"]]
    else:
        rho = ICC if icc is None else icc
        found = [_prompt_row(gap, prompts=int(k), icc=rho, base_rate=base_rate, alpha=alpha, power=power)
                 for k in table["prompts"]]
        table = pd.concat([table, pd.DataFrame(found)], axis=1)
    said = "--icc" if icc is not None else "the default: the upper quartile of a SmolLM2 sheng2019 run's, docs/statistics.md"
    return _finish(table, alpha, m, gap, power, f"{base_rate:g} (--base-rate)", unit,
                   f"{ICC if icc is None else icc:g} ({said})")


def _finish(table: pd.DataFrame, alpha: float, m: int, gap: float, power: float, source: str, unit: str,
            icc: str, seconds_per_sample: float | None = None, prompts_total: int | None = None) -> Plan:
    """The :class:`Plan` of a finished ``table``: rows needing the most first, unreachable ones on top."""
    table = table.assign(_order=table["samples_per_prompt"].astype(float).fillna(float("inf")))
    table = table.sort_values("_order", ascending=False, kind="stable").drop(columns="_order").reset_index(drop=True)
    counts = [c for c in ("samples_per_prompt", "n_per_group", "prompts_needed") if c in table]
    table = table.astype({c: "Int64" for c in counts})
    answer = None if table["samples_per_prompt"].isna().any() else int(table["samples_per_prompt"].max())
    return Plan(answer, table, alpha, m, gap, power, source, unit, icc if unit == "prompt" else "", seconds_per_sample,
                prompts_total)


def _plan_from_run(folder: Path, *, gap: float, power: float, flags: bool, suite_name: str | None = None,
                   icc: float | None = None, prompts_per_group: int | None = None, unit: str = INFERENCE_UNIT) -> Plan:
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
    observed = [_observed_icc(row) for row in gaps.itertuples(index=False)]
    pilot = float(pd.Series([v for v in observed if v is not None]).median()) if any(
        v is not None for v in observed) else ICC  # one pooled value: a comparison's own is noisy at few templates
    per_group = samples.groupby(["context", "group"])["template_id"].nunique()
    prompts = per_group.groupby(level=0).min()
    groups = samples.groupby("context")["group"].nunique()
    total = int(groups.sum() * prompts_per_group) if prompts_per_group else int(samples["prompt_id"].nunique())
    out = []
    for row in gaps.itertuples(index=False):
        pooled = (row.k_a + row.k_b) / (row.n_a + row.n_b)
        pooled = min(pooled, 1 - gap) if pooled <= 0.5 else max(pooled, gap)  # keep the other share in [0, 1]
        k = int(prompts_per_group or prompts.get(row.context, 1))
        base = {"model": row.model, "context": row.context, "scorer": row.scorer, "label": row.label,
                "compared": row.compared, "base_rate": pooled, "prompts": k}
        if unit == "sample":
            n = samples_for_gap(gap, base_rate=pooled, alpha=alpha, power=power)
            out.append({**base, "n_per_group": n, "samples_per_prompt": math.ceil(n / k)})
        else:
            rho = icc if icc is not None else pilot
            out.append({**base, **_prompt_row(gap, prompts=k, icc=rho, base_rate=pooled, alpha=alpha, power=power)})
    rate = _seconds_per_sample(manifest)
    return _finish(pd.DataFrame(out), alpha, m, gap, power, f"observed pooled share of each comparison in {folder}",
                   unit, f"{icc:g} (--icc)" if icc is not None else
                   f"{pilot:.3g}, the median over the comparisons of {folder} of (deff - 1) / (samples per prompt - 1)",
                   rate, total)


def _observed_icc(row) -> float | None:
    """A gap's intra-prompt correlation from its design effect: (deff - 1) / (samples per prompt - 1),
    at least 0; None for a comparison without one (one prompt a side, a sample-level run, or a run
    written before prompt-level statistics)."""
    deff, units, df = (getattr(row, name, float("nan")) for name in ("deff", "units_a", "df"))
    if not (pd.notna(deff) and pd.notna(units) and pd.notna(df) and units > 0):
        return None
    return gap_icc(float(deff), row.n_a / units)


def _seconds_per_sample(manifest: dict) -> float | None:
    """Seconds to generate and score one sample in the run's last invocation (None when it generated none)."""
    generated = manifest.get("generated_now")
    timings = manifest.get("timings_s", {})
    if not generated or "generate" not in timings:
        return None
    return (float(timings["generate"]) + float(timings.get("score", 0.0))) / int(generated)


__all__ = ["Plan", "plan", "suite_comparisons"]
