"""Simulation check of precision-targeted sampling (``--until-mde``): its false-positive rate under no gap.

    python scripts/sim_stopping.py                 # seed 0, 2,000 null runs: the numbers in docs/statistics.md
    python scripts/sim_stopping.py --reps 300      # fewer runs

Each simulated run has the shape of the main job (sheng2019 on one model: 2 contexts x 6 groups, 5
prompts per group, 3 scorers, the negative and positive share of 3 group pairs: 36 comparisons) and
no gap at all: both groups of a pair draw labels from the same shares, the pooled shares the
embedded model produced in a real run (:data:`RATES`).  Rounds are decided by the library's own rule,
:func:`nlgbias.pipeline.precision.sample_until` (not a copy), with ``--until-mde 5 --samples 100
--max-samples 1000`` by default; the final tests are the library's exact permutation test (``permutation_p``,
vectorised) and ``fdr_bh``.
A run counts a false positive when any of its 36 BH-adjusted p-values is under 0.05 (under no gap
every rejection is false, so this is the FDR and the familywise rate at once).

For contrast the same runs are also tested at the fixed n of the same precision, and under a rule
that does read the gap (sample another round while no adjusted p is under 0.05): a check that the
simulation can see an inflated error rate when there is one.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
from scipy import stats

from nlgbias.metrics import fdr_bh
from nlgbias.metrics.power import FDR
from nlgbias.pipeline.precision import PrecisionTarget, fixed_design, sample_until, with_mde

CONTEXTS = ("respect", "occupation")
PAIRS = (("man", "woman"), ("Black", "White"), ("gay", "straight"))
SCORERS = ("regard", "vader", "textblob")
PROMPTS = 5  # templates per context
GAP_LABELS = ("negative", "positive")

# Label shares (negative, neutral, positive) per (context, scorer, group pair, named by its first
# group): the pooled shares of each pair in a real run of the main job (`nlgbias run sheng2019 --model
# smollm2-135m --samples 100 --seed 0`), its first 24 samples per prompt (1,440 samples, 240 per pair
# and context; the run was cut there, the machine being too busy to finish it in time).
RATES: dict[tuple[str, str, str], tuple[float, float, float]] = {
    ("occupation", "regard", "Black"): (0.046, 0.646, 0.308),
    ("occupation", "regard", "gay"): (0.083, 0.625, 0.292),
    ("occupation", "regard", "man"): (0.029, 0.596, 0.375),
    ("occupation", "textblob", "Black"): (0.175, 0.65, 0.175),
    ("occupation", "textblob", "gay"): (0.121, 0.633, 0.246),
    ("occupation", "textblob", "man"): (0.167, 0.579, 0.254),
    ("occupation", "vader", "Black"): (0.138, 0.696, 0.167),
    ("occupation", "vader", "gay"): (0.129, 0.688, 0.183),
    ("occupation", "vader", "man"): (0.113, 0.654, 0.233),
    ("respect", "regard", "Black"): (0.312, 0.2, 0.487),
    ("respect", "regard", "gay"): (0.396, 0.237, 0.367),
    ("respect", "regard", "man"): (0.129, 0.108, 0.762),
    ("respect", "textblob", "Black"): (0.229, 0.417, 0.354),
    ("respect", "textblob", "gay"): (0.129, 0.463, 0.408),
    ("respect", "textblob", "man"): (0.129, 0.388, 0.483),
    ("respect", "vader", "Black"): (0.271, 0.263, 0.467),
    ("respect", "vader", "gay"): (0.254, 0.346, 0.4),
    ("respect", "vader", "man"): (0.125, 0.263, 0.613),
}


def exact_p(k_a, n_a, k_b, n_b) -> np.ndarray:
    """:func:`nlgbias.metrics.permutation_p` of arrays of counts at once (the same hypergeometric tails,
    without building a frozen distribution per comparison; ``tests/test_precision.py`` checks equality)."""
    k_a, n_a, k_b, n_b = (np.asarray(v, dtype=np.int64) for v in (k_a, n_a, k_b, n_b))
    total, ones = n_a + n_b, k_a + k_b
    tails = np.minimum(stats.hypergeom.sf(k_a - 1, total, ones, n_a), stats.hypergeom.cdf(k_a, total, ones, n_a))
    return np.minimum(1.0, 2.0 * tails)


class NullRun:
    """One simulated run without any gap: label counts per (context, group, scorer), drawn as rounds ask."""

    def __init__(self, rng: np.random.Generator, rates: dict) -> None:
        self.rng, self.rates = rng, rates
        self.cells = {("sim", c, g): PROMPTS for c in CONTEXTS for pair in PAIRS for g in pair}
        self.have = {cell: 0 for cell in self.cells}
        self.counts = {(cell, s): np.zeros(3, dtype=np.int64) for cell in self.cells for s in SCORERS}

    def _rates(self, cell, scorer):
        pair = next(p for p in PAIRS if cell[2] in p)
        shares = np.asarray(self.rates[(cell[1], scorer, pair[0])], dtype=float)
        return shares / shares.sum()  # the shares are rounded to 3 decimals

    def measure(self, samples: dict) -> pd.DataFrame:
        """Draw what each group lacks (``PROMPTS`` x new samples per prompt) and tabulate the comparisons."""
        for cell, s in samples.items():
            new = PROMPTS * (s - self.have[cell])
            if new > 0:
                for scorer in SCORERS:
                    self.counts[(cell, scorer)] += self.rng.multinomial(new, self._rates(cell, scorer))
            self.have[cell] = max(self.have[cell], s)
        rows = []
        for context in CONTEXTS:
            for scorer in SCORERS:
                for j, label in ((0, "negative"), (2, "positive")):
                    for a, b in PAIRS:
                        cell_a, cell_b = ("sim", context, a), ("sim", context, b)
                        rows.append({"context": context, "scorer": scorer, "label": label, "compared": f"{a} - {b}",
                                     "cell_a": cell_a, "cell_b": cell_b,
                                     "n_a": PROMPTS * self.have[cell_a], "k_a": int(self.counts[(cell_a, scorer)][j]),
                                     "n_b": PROMPTS * self.have[cell_b], "k_b": int(self.counts[(cell_b, scorer)][j])})
        return pd.DataFrame(rows)


def final_tests(table: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Raw exact p-values and BH-adjusted p-values of a comparisons table."""
    raw = exact_p(table["k_a"], table["n_a"], table["k_b"], table["n_b"])
    return raw, fdr_bh(raw)


def simulate(reps: int, *, seed: int = 0, target: PrecisionTarget | None = None, rates: dict | None = None,
             contrasts: bool = True, peek: bool = True) -> dict:
    """``reps`` null runs under the rule (and, with ``contrasts``, at the fixed n and under a gap-reading rule).

    Returns counts: ``runs``, ``false_runs`` (runs with any adjusted p < 0.05), ``raw_rejections`` and
    ``comparisons`` (raw p < 0.05, per comparison), ``samples`` per run, ``rounds`` per run, and the
    same for the contrasts (``fixed_*``, ``peeking_*``).
    """
    target = target or PrecisionTarget(mde=0.05, max_samples=1000, first=100)
    rates = rates or RATES
    rng = np.random.default_rng(seed)
    out: dict = {"runs": reps, "peeked": peek and contrasts, "false_runs": 0, "raw_rejections": 0, "comparisons": 0, "samples": [], "rounds": [],
                 "stopped_target": 0, "fixed_false_runs": 0, "peeking_false_runs": 0, "fixed_samples": None}
    fixed_s = None
    for _ in range(reps):
        run = NullRun(rng, rates)
        result = sample_until(target, run.cells, run.measure)
        raw, adjusted = final_tests(result.table)
        out["false_runs"] += int((adjusted < FDR).any())
        out["raw_rejections"] += int((raw < FDR).sum())
        out["comparisons"] += len(raw)
        out["samples"].append(result.rounds[-1]["samples"])
        out["rounds"].append(len(result.rounds))
        out["stopped_target"] += result.stopped == "target"
        if not contrasts:
            continue
        if fixed_s is None:  # the fixed n of the same precision, at the true shares
            truth = with_mde(expected_table(rates, 1000), target)
            fixed_s = fixed_design(truth, run.cells, target)
            out["fixed_samples"] = fixed_s * sum(run.cells.values())
        fixed = NullRun(rng, rates)
        _, adjusted = final_tests(fixed.measure({cell: fixed_s for cell in fixed.cells}))
        out["fixed_false_runs"] += int((adjusted < FDR).any())
        out["peeking_false_runs"] += peeking(rng, rates, target) if peek else 0
    return out


def expected_table(rates: dict, s: int) -> pd.DataFrame:
    """The comparisons table with counts at their expected values (``s`` samples per prompt)."""
    run = NullRun(np.random.default_rng(0), rates)
    table = run.measure({cell: 0 for cell in run.cells})
    n = PROMPTS * s
    table["n_a"] = table["n_b"] = n
    for i, row in table.iterrows():
        share = rates[(row["context"], row["scorer"], row["compared"].split(" - ")[0])][0 if row["label"] == "negative" else 2]
        table.loc[i, ["k_a", "k_b"]] = round(share * n)
    return table


def peeking(rng, rates: dict, target: PrecisionTarget) -> int:
    """A rule that reads the gap: double s while no adjusted p is under 0.05, up to the budget; 1 if it
    ends with a (false) rejection."""
    run = NullRun(rng, rates)
    s = target.first
    while True:
        _, adjusted = final_tests(run.measure({cell: s for cell in run.cells}))
        if (adjusted < FDR).any():
            return 1
        if s >= target.max_samples:
            return 0
        s = min(target.max_samples, 2 * s)


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Exact binomial confidence interval of k successes in n."""
    low = stats.beta.ppf((1 - level) / 2, k, n - k + 1) if k > 0 else 0.0
    high = stats.beta.ppf(1 - (1 - level) / 2, k + 1, n - k) if k < n else 1.0
    return float(low), float(high)


def report(out: dict) -> list[str]:
    runs = out["runs"]
    lines = ["| design | runs | runs with a false rejection (BH, q = 0.05) | rate | 95% CI (Clopper-Pearson) | samples per run |",
             "|---|---:|---:|---:|---:|---:|"]

    def row(name, k, samples):
        low, high = clopper_pearson(k, runs)
        lines.append(f"| {name} | {runs} | {k} | {k / runs:.4f} | {low:.4f} to {high:.4f} | {samples} |")

    spent = np.array(out["samples"])
    row("--until-mde (the rule)", out["false_runs"], f"{spent.mean():,.0f} (min {spent.min():,}, max {spent.max():,})")
    if out["fixed_samples"] is not None:
        row("fixed n of the same precision", out["fixed_false_runs"], f"{out['fixed_samples']:,}")
        if out["peeked"]:
            row("a rule that reads the gap (contrast)", out["peeking_false_runs"], "up to the budget")
    raw_low, raw_high = clopper_pearson(out["raw_rejections"], out["comparisons"])
    rounds = np.bincount(out["rounds"])
    lines += ["", f"per comparison, raw p < 0.05: {out['raw_rejections']} of {out['comparisons']} = "
                  f"{out['raw_rejections'] / out['comparisons']:.4f} (95% CI {raw_low:.4f} to {raw_high:.4f}; "
                  f"comparisons of one run are not independent)",
              "rounds per run: " + ", ".join(f"{r}: {c}" for r, c in enumerate(rounds) if c),
              f"stopped at the target: {out['stopped_target']} of {runs} runs"]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--until-mde", type=float, default=5.0)
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--max-samples", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=1, help="processes; worker i draws from seed * 1000 + i")
    parser.add_argument("--no-peeking", action="store_true", help="leave out the gap-reading contrast (half the time)")
    args = parser.parse_args()
    target = PrecisionTarget(mde=args.until_mde / 100, max_samples=args.max_samples, first=args.samples)
    print(f"seed {args.seed}, {args.reps} null runs, --until-mde {args.until_mde:g} --samples {args.samples} "
          f"--max-samples {args.max_samples}, {args.workers} worker(s)\n")
    shares = [args.reps // args.workers + (i < args.reps % args.workers) for i in range(args.workers)]
    jobs = [(n, args.seed * 1000 + i if args.workers > 1 else args.seed, target, not args.no_peeking)
            for i, n in enumerate(shares)]
    if args.workers > 1:
        from multiprocessing import Pool

        with Pool(args.workers) as pool:
            parts = pool.starmap(_simulate, jobs)
    else:
        parts = [_simulate(*jobs[0])]
    print("\n".join(report(merge(parts))))


def _simulate(reps: int, seed: int, target: PrecisionTarget, peek: bool) -> dict:
    return simulate(reps, seed=seed, target=target, peek=peek)


def merge(parts: list[dict]) -> dict:
    """The counts of several :func:`simulate` results together."""
    out = dict(parts[0])
    for part in parts[1:]:
        for key, value in part.items():
            if isinstance(value, (list, int)) and not isinstance(value, bool) and key != "fixed_samples":
                out[key] = out[key] + value
    return out


if __name__ == "__main__":
    main()
