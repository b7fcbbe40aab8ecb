"""Precision-targeted sampling: sample in rounds until every comparison can see a gap of a target size.

``nlgbias run ... --samples S --until-mde D --max-samples M`` (``until_mde=D, max_samples=M`` in
Python).  The rule, which :func:`sample_until` applies and the manifest records:

1. A *prompt group* is a (model, context, group): every prompt of it enters the same comparisons,
   so its prompts share one samples-per-prompt count s.  Round 1 gives every prompt group s = S.
2. After each round every comparison of the run (group gaps and model gaps, every scorer and gap
   label) gets its minimum detectable effect, computed by the report's own function
   (:func:`nlgbias.metrics.power.mde_column`: 80% power at FDR / m, m the run's comparisons) from
   its current ``n_a``, ``n_b`` and pooled share ``(k_a + k_b) / (n_a + n_b)`` and, at prompt level,
   its design effect and degrees of freedom.
3. If every MDE is at most D, sampling stops (``stopped: target``).  A comparison whose MDE is
   empty (no gap visible at its n) is above D.
4. A prompt group is *open* when a comparison it enters is above D and its s is under M.  If no
   group is open, sampling stops (``stopped: max_samples``).  Closed groups keep their s (and
   reopen if a comparison of theirs moves above D again).
5. An open group's next s is the smallest s' at which each of its comparisons above D would reach
   D with both sides at s' samples per prompt and the comparison's current pooled share, clamped to
   ``[ceil(1.1 s), 4 s]`` (at least a tenth more, so a round never adds a handful; at most four
   times, so a poor early estimate of a share cannot overshoot far), and to M.  At prompt level the
   projection keeps the comparison's prompts and its intra-prompt correlation (from its design
   effect): more samples of the same prompts approach a floor that only more prompts lower, so a
   comparison whose prompts cannot reach D grows to M.

The rule reads only n and pooled shares, never the difference between the two sides: under no
gap, the pooled share says nothing about the gap, so the rule cannot chase a chance difference.
``scripts/sim_stopping.py`` checks by simulation that the final Benjamini-Hochberg tests keep their
false-positive rate (``docs/statistics.md``).

A round's new samples (sample indices ``s_old .. s_new - 1`` of its open groups) are generated
as one plan with fixed batches, and each round's decisions depend only on stored samples, so a
run killed in any round and rerun with the same options replays the earlier rounds from the store
and ends with the same samples as an uninterrupted run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Hashable

import pandas as pd

from nlgbias.metrics.power import FDR, POWER, detectable_gap, family_alpha, gap_icc, mde_column, two_level_gap

MIN_GROWTH = 1.1  # a round raises an open group's samples per prompt by at least a tenth
MAX_GROWTH = 4.0  # and at most four times

Cell = Hashable  # a prompt group's key: (model, context, group) in a run


@dataclass(frozen=True)
class PrecisionTarget:
    """The stopping rule's settings: the target MDE (a share, 0.05 = 5 points), the budget and round 1.

    ``first`` and ``max_samples`` are samples per prompt (and model).
    """

    mde: float
    max_samples: int
    first: int
    power: float = POWER
    fdr: float = FDR

    def describe(self) -> dict:
        """What identifies the rule (part of the run id and the manifest)."""
        return {"until_mde": self.mde, "max_samples": self.max_samples, "first_round": self.first,
                "power": self.power, "fdr": self.fdr, "growth": [MIN_GROWTH, MAX_GROWTH], "rule_version": 1}


@dataclass
class Rounds:
    """What :func:`sample_until` did: ``samples`` (final s per prompt group), ``rounds`` (one record
    each), ``stopped`` (``target`` or ``max_samples``) and ``table`` (the last round's comparisons with
    ``base_rate`` and ``mde``)."""

    target: PrecisionTarget
    samples: dict
    rounds: list[dict] = field(default_factory=list)
    stopped: str = ""
    table: pd.DataFrame = field(default_factory=pd.DataFrame)


def with_mde(table: pd.DataFrame, target: PrecisionTarget) -> pd.DataFrame:
    """``table`` (``n_a, k_a, n_b, k_b`` per comparison) plus ``base_rate`` (pooled share) and ``mde``,
    the report's column at FDR / m with m = the rows of ``table``."""
    out = table.copy()
    total = out["n_a"] + out["n_b"]
    out["base_rate"] = ((out["k_a"] + out["k_b"]) / total.where(total > 0)).astype(float)
    out["mde"] = mde_column(out, alpha=family_alpha(len(out), target.fdr), power=target.power)
    return out


def samples_to_reach(base_rate: float, prompts: int, *, low: int, high: int, target: PrecisionTarget,
                     alpha: float, icc: float | None = None) -> int:
    """The smallest s in ``[low, high]`` whose MDE with ``prompts * s`` samples on each side, from
    ``base_rate``, is at most the target (``high`` if none is); with ``icc`` (prompt level) the MDE of
    :func:`~nlgbias.metrics.power.two_level_gap`."""
    def enough(s: int) -> bool:
        if icc is not None:
            found = two_level_gap(prompts, s, icc=icc, base_rate=base_rate, alpha=alpha, power=target.power)
        else:
            found = detectable_gap(prompts * s, prompts * s, base_rate=base_rate, alpha=alpha, power=target.power)
        return bool(found <= target.mde)

    if base_rate != base_rate:  # nan: no labelled sample yet, nothing to plan from
        return high
    if not enough(high):
        return high
    while low < high:
        middle = (low + high) // 2
        if enough(middle):
            high = middle
        else:
            low = middle + 1
    return low


def next_samples(table: pd.DataFrame, samples: dict, prompts: dict, target: PrecisionTarget) -> dict:
    """The next round's samples per prompt of every open prompt group (rule steps 4 and 5).

    ``table`` is :func:`with_mde`'s output with ``cell_a`` and ``cell_b``; ``samples`` and
    ``prompts`` map every prompt group to its current s and its number of prompts.  Returns only
    the groups that grow (empty: no group is open).
    """
    alpha = family_alpha(len(table), target.fdr)
    over = table[~(table["mde"] <= target.mde)]
    grow: dict = {}
    for row in over.itertuples(index=False):
        for cell in (row.cell_a, row.cell_b):
            s = samples[cell]
            if s >= target.max_samples:
                continue
            low = min(target.max_samples, max(s + 1, math.ceil(MIN_GROWTH * s - 1e-9)))  # 1.1 * 100 is 110.00000000000001
            high = min(target.max_samples, max(low, math.floor(MAX_GROWTH * s)))
            need = samples_to_reach(float(row.base_rate), prompts[cell], low=low, high=high, target=target, alpha=alpha,
                                    icc=prompt_icc(row, s))
            grow[cell] = max(grow.get(cell, 0), need)
    return grow


def prompt_icc(row, samples: int) -> float | None:
    """A comparison's intra-prompt correlation, ``(deff - 1) / (samples - 1)`` at least 0, from its
    design effect at ``samples`` per prompt; None at sample level (no ``df``)."""
    df, deff = getattr(row, "df", float("nan")), getattr(row, "deff", float("nan"))
    if not (df == df and deff == deff):  # nan: sample level, or one prompt a side
        return None
    found = gap_icc(float(deff), samples)
    return 0.0 if found is None else found


def sample_until(target: PrecisionTarget, prompts: dict, measure: Callable[[dict], pd.DataFrame], *,
                 note: Callable[[str], None] | None = None) -> Rounds:
    """Sample in rounds until every comparison's MDE is at most ``target.mde`` or the budget is spent.

    Parameters
    ----------
    target : PrecisionTarget
    prompts : dict
        Prompt group -> its number of prompts.
    measure : callable
        ``measure(samples) -> table``: brings every prompt group to ``samples[group]`` samples per
        prompt (drawing only what it lacks) and returns one row per comparison with ``cell_a,
        cell_b, n_a, k_a, n_b, k_b`` and any describing columns (kept in the record).
    note : callable, optional
        Called with a one-line summary of each round.

    Returns
    -------
    Rounds
    """
    samples = {cell: target.first for cell in prompts}
    result = Rounds(target, samples)
    while True:
        table = with_mde(measure(dict(samples)), target)
        over = table[~(table["mde"] <= target.mde)]
        grow = next_samples(table, samples, prompts, target) if len(over) else {}
        result.rounds.append(round_record(len(result.rounds) + 1, table, samples, prompts, target))
        result.table = table
        if note:
            note(f"round {len(result.rounds)}: {sum(samples[c] * prompts[c] for c in samples)} samples, "
                 f"{len(over)} of {len(table)} comparisons above an MDE of {100 * target.mde:g} points")
        if len(over) == 0 or not grow:
            result.stopped = "target" if len(over) == 0 else "max_samples"
            return result
        samples.update(grow)


def round_record(number: int, table: pd.DataFrame, samples: dict, prompts: dict, target: PrecisionTarget) -> dict:
    """One round of the manifest: samples per prompt of each prompt group, each comparison's n,
    pooled share and MDE (what the rule read), and the count above the target."""
    keys = ("model", "context", "group")
    groups = [{**(dict(zip(keys, cell)) if isinstance(cell, tuple) and len(cell) == 3 else {"cell": str(cell)}),
               "prompts": int(prompts[cell]), "samples_per_prompt": int(samples[cell])} for cell in samples]
    described = [c for c in table.columns if c not in ("cell_a", "cell_b", "k_a", "k_b", "n_a", "n_b", "base_rate", "mde")]
    comparisons = []
    for row in table.to_dict(orient="records"):
        mde = row["mde"]
        comparisons.append({**{c: row[c] for c in described}, "n_a": int(row["n_a"]), "n_b": int(row["n_b"]),
                            "base_rate": round(float(row["base_rate"]), 6),
                            "mde": None if mde != mde else round(float(mde), 6)})
    finite = [c["mde"] for c in comparisons if c["mde"] is not None]
    return {"round": number, "samples": int(sum(samples[c] * prompts[c] for c in samples)),
            "over_target": int(sum(1 for c in comparisons if c["mde"] is None or c["mde"] > target.mde)),
            "max_mde": max(finite) if len(finite) == len(comparisons) and finite else None,
            "prompt_groups": groups, "comparisons": comparisons}


def fixed_design(table: pd.DataFrame, prompts: dict, target: PrecisionTarget, *, limit: int = 100_000) -> int:
    """Samples per prompt that a fixed-n design needs for every comparison of ``table`` (with
    ``cell_a``, ``base_rate``) to reach the target, at the shares observed: the largest per comparison."""
    alpha = family_alpha(len(table), target.fdr)
    return max((samples_to_reach(float(row.base_rate), prompts[row.cell_a], low=1, high=limit, target=target,
                                 alpha=alpha, icc=prompt_icc(row, round(row.n_a / prompts[row.cell_a])))
                for row in table.itertuples(index=False) if row.base_rate == row.base_rate), default=limit)


def summary(result: Rounds, prompts: dict) -> dict:
    """The manifest's ``precision`` entry: the rule in words, its settings, every round, why it
    stopped, and the fixed-n design of the same precision at the final shares."""
    target = result.target
    spent = sum(result.samples[c] * prompts[c] for c in result.samples)
    fixed = fixed_design(result.table, prompts, target) if len(result.table) else None
    why = (f"every comparison's MDE is at most {100 * target.mde:g} points" if result.stopped == "target" else
           f"the prompt groups of the {result.rounds[-1]['over_target']} comparisons still above "
           f"{100 * target.mde:g} points reached --max-samples {target.max_samples}")
    return {
        **target.describe(),
        "rule": "rounds raise each prompt group's (model, context, group) samples per prompt; after each round "
                "every comparison's MDE (80% power at FDR / m, from its n and pooled share: the report's mde "
                "column) is computed; groups whose comparisons are all at or under the target stop; the others "
                f"grow to the s that their pooled shares call for, at least x{MIN_GROWTH:g} and at most "
                f"x{MAX_GROWTH:g}, until every MDE is at or under the target or the groups reach max_samples. "
                "The rule reads n and pooled shares only, never the observed gap.",
        "stopped": result.stopped,
        "why": why,
        "rounds": result.rounds,
        "samples": int(spent),
        "fixed_design": None if fixed is None else {
            "samples_per_prompt": int(fixed), "samples": int(fixed * sum(prompts.values())),
            "note": "a single n for every prompt that reaches the target in every comparison, at the pooled "
                    "shares this run observed (it needs those shares in advance)"},
    }


__all__ = ["MAX_GROWTH", "MIN_GROWTH", "PrecisionTarget", "Rounds", "fixed_design", "next_samples",
           "round_record", "sample_until", "samples_to_reach", "summary", "with_mde"]
