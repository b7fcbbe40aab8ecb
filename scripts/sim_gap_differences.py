"""Simulation checks of the gap-difference test, its CI and its MDE; prints the table of docs/statistics.md.

    python scripts/sim_gap_differences.py            # seed 0, the numbers in the doc (a few minutes)
    python scripts/sim_gap_differences.py --quick    # a tenth of the replicates

Four binomial cells per replicate (model a or b, group 1 or 2, n each); the test is the library's
:func:`nlgbias.metrics.significance.gap_difference_p`, the MDE
:func:`nlgbias.metrics.power.detectable_gap_difference`.  Rows: false positives when the gaps are
equal (no model effect; and the same gap at other base rates), power at the MDE (the difference
split as +d/2 in model a's group 1 and -d/2 in its group 2).
"""

from __future__ import annotations

import argparse

import numpy as np

from nlgbias.metrics.power import detectable_gap_difference
from nlgbias.metrics.significance import gap_difference_p


def rejection_rate(probs, n: int, alpha: float, reps: int, rng: np.random.Generator) -> float:
    k = rng.binomial(n, probs, size=(reps, 4))  # a1, a2, b1, b2
    return float(np.mean([gap_difference_p((a1, n, b1, n), (a2, n, b2, n)) < alpha for a1, a2, b1, b2 in k]))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    reps = 400 if args.quick else 4000
    rng = np.random.default_rng(args.seed)
    print("| cells a1, a2, b1, b2 | n per cell | α | rejection rate | SE |")
    print("|---|---:|---:|---:|---:|")
    for probs, n, alpha in [((0.2, 0.2, 0.2, 0.2), 50, 0.05), ((0.3, 0.3, 0.3, 0.3), 200, 0.05),
                            ((0.4, 0.2, 0.55, 0.35), 60, 0.05), ((0.4, 0.2, 0.55, 0.35), 300, 0.01),
                            ((0.1, 0.1, 0.3, 0.3), 100, 0.05)]:
        rate = rejection_rate(probs, n, alpha, reps, rng)
        print(f"| {', '.join(f'{p:g}' for p in probs)} (equal gaps) | {n} | {alpha:g} | {rate:.4f} | "
              f"{np.sqrt(alpha * (1 - alpha) / reps):.4f} |")
    print()
    print("| n per cell | base rate | α | MDE (points) | simulated power | SE |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n, p, alpha in [(60, 0.3, 0.05), (100, 0.3, 0.05), (150, 0.2, 0.05), (400, 0.1, 0.01), (100, 0.5, 0.005)]:
        d = detectable_gap_difference([n] * 4, base_rate=p, alpha=alpha)
        power = rejection_rate((p + d / 2, p - d / 2, p, p), n, alpha, reps, rng)
        print(f"| {n} | {p:g} | {alpha:g} | {100 * d:.2f} | {power:.3f} | {np.sqrt(0.16 / reps):.3f} |")


if __name__ == "__main__":
    main()
