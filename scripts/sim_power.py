"""Simulation checks of the gap tests and the power formula; prints the tables of docs/statistics.md.

    python scripts/sim_power.py            # seed 0, the numbers in the doc (about a minute)
    python scripts/sim_power.py --quick    # a tenth of the replicates

Every draw comes from ``numpy.random.default_rng(seed)``; the tests are the library's own
(:func:`nlgbias.metrics.permutation_p`, :func:`nlgbias.metrics.fdr_bh`), and the power formula is
:func:`nlgbias.metrics.power.detectable_gap` (also without its continuity correction, to show why
it has one).  Counts per group are binomial: a gap test sees only ``k`` and ``n`` of each side.
"""

from __future__ import annotations

import argparse
import math
from functools import lru_cache

import numpy as np

from nlgbias.metrics import fdr_bh, permutation_p
from nlgbias.metrics.power import FDR, continuity, detectable_gap, family_alpha, samples_for_gap
from nlgbias.pipeline.planning import plan


@lru_cache(maxsize=None)
def _p(k_a: int, n_a: int, k_b: int, n_b: int) -> float:
    return permutation_p(k_a, n_a, k_b, n_b)


def p_values(k_a, n_a, k_b, n_b) -> np.ndarray:
    """The exact permutation p-value of each pair of counts (cached: counts repeat)."""
    return np.array([_p(int(a), n_a, int(b), n_b) for a, b in zip(np.ravel(k_a), np.ravel(k_b))]).reshape(np.shape(k_a))


def se(rate: float, reps: int) -> float:
    return math.sqrt(rate * (1 - rate) / reps)


def false_positives(rng, reps: int) -> list[str]:
    """One comparison, no gap: how often p < alpha."""
    rows = ["| n per group | base rate | alpha | false-positive rate | simulation SE |", "|---:|---:|---:|---:|---:|"]
    for n, p in [(10, 0.2), (50, 0.2), (100, 0.05), (100, 0.5), (500, 0.2), (2000, 0.1)]:
        ps = p_values(rng.binomial(n, p, reps), n, rng.binomial(n, p, reps), n)
        for alpha in (0.05, 0.01):
            rate = float(np.mean(ps < alpha))
            rows.append(f"| {n} | {p:g} | {alpha:g} | {rate:.4f} | {se(rate, reps):.4f} |")
    return rows


def bh_families(rng, reps: int) -> list[str]:
    """A family of 36 comparisons (sheng2019 on one model), BH at q = 0.05: the false discovery rate."""
    rows = ["| comparisons | true gaps (10 pts) | n per group | FDR (mean V/R) | P(any false rejection) | "
            "power per true gap | simulation SE of FDR |", "|---:|---:|---:|---:|---:|---:|---:|"]
    m = 36
    for true, n in [(0, 100), (0, 1000), (9, 300), (18, 300)]:
        base = np.full(m, 0.2)
        shifted = base.copy()
        shifted[:true] += 0.10
        k_a = rng.binomial(n, shifted, size=(reps, m))
        k_b = rng.binomial(n, base, size=(reps, m))
        ps = p_values(k_a, n, k_b, n)
        rejected = np.array([fdr_bh(row) < FDR for row in ps])
        false = rejected[:, true:].sum(axis=1)
        total = rejected.sum(axis=1)
        fdp = np.where(total > 0, false / np.maximum(total, 1), 0.0)
        power = f"{rejected[:, :true].mean():.3f}" if true else "–"
        rows.append(f"| {m} | {true} | {n} | {fdp.mean():.4f} | {np.mean(false > 0):.4f} | {power} | "
                    f"{fdp.std(ddof=1) / math.sqrt(reps):.4f} |")
    return rows


def power_points(rng, reps: int) -> list[str]:
    """The formula's MDE at (n, base rate, alpha), and the simulated power of the exact test there."""
    rows = ["| n per group | base rate | alpha | MDE (pts) | simulated power | without continuity correction: MDE, power |",
            "|---:|---:|---:|---:|---:|---:|"]
    for n, p, alpha in [(50, 0.3, 0.05), (100, 0.2, 0.05), (200, 0.5, 0.05), (500, 0.1, 0.05),
                        (300, 0.05, family_alpha(36)), (1000, 0.3, family_alpha(36)), (2308, 0.2, family_alpha(36))]:
        out = []
        for correct in (True, False):
            gap = detectable_gap(n, n, base_rate=p, alpha=alpha) - (0 if correct else continuity(n, n))
            other = p + gap if p <= 0.5 else p - gap
            ps = p_values(rng.binomial(n, other, reps), n, rng.binomial(n, p, reps), n)
            out.append((gap, float(np.mean(ps < alpha))))
        (gap, power), (raw_gap, raw_power) = out
        rows.append(f"| {n} | {p:g} | {alpha:.3g} | {100 * gap:.2f} | {power:.3f} ± {se(power, reps):.3f} | "
                    f"{100 * raw_gap:.2f}, {raw_power:.3f} |")
    return rows


def plan_check(rng, reps: int) -> list[str]:
    """`nlgbias plan sheng2019 --mde 10`: simulate the run it asks for (36 comparisons, every one a
    10-point gap from 20%, BH at 0.05) and count how often each gap is found."""
    result = plan("sheng2019", mde=10, power=0.8, base_rate=0.2)
    n = result.samples_per_prompt * 5  # 5 prompts per group and context
    m = result.n_comparisons
    k_a = rng.binomial(n, 0.3, size=(reps, m))
    k_b = rng.binomial(n, 0.2, size=(reps, m))
    ps = p_values(k_a, n, k_b, n)
    bh = np.array([fdr_bh(row) < FDR for row in ps]).mean()
    bonferroni = float(np.mean(ps < result.alpha))
    needed = samples_for_gap(0.10, base_rate=0.2, alpha=result.alpha)
    return [f"plan: {result.samples_per_prompt} samples per prompt ({n} per group; the formula needs {needed}); "
            f"{m} comparisons at {result.alpha:.3g}",
            f"simulated power per comparison: {bonferroni:.3f} at the Bonferroni level, {bh:.3f} with BH over all "
            f"{m} gaps (± {se(bh, reps * m):.3f})"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="a tenth of the replicates")
    args = parser.parse_args()
    scale = 10 if args.quick else 1
    rng = np.random.default_rng(args.seed)
    print(f"seed {args.seed}\n\n## False positives, one comparison ({20000 // scale} replicates per row)\n")
    print("\n".join(false_positives(rng, 20000 // scale)))
    print(f"\n## Benjamini-Hochberg over 36 comparisons ({4000 // scale} families per row)\n")
    print("\n".join(bh_families(rng, 4000 // scale)))
    print(f"\n## Power at the formula's MDE ({20000 // scale} replicates per row; nominal 0.800)\n")
    print("\n".join(power_points(rng, 20000 // scale)))
    print(f"\n## A plan, simulated ({2000 // scale} runs)\n")
    print("\n".join(plan_check(rng, 2000 // scale)))


if __name__ == "__main__":
    main()
