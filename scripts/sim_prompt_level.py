"""Simulation check of prompt-level inference: coverage and false positives, old method beside new.

Each simulated run draws templates (or prompts) and then samples within them, as a real run does:

    logit P(negative | group g, template t) = mu + a[t] + b[g] + c[g, t]

``a[t]`` (sd ``sigma_template``) moves a template's rate for every group, ``c[g, t]`` (sd
``sigma_interaction``) moves the gap from template to template: 0.3 at a 30% base rate gives
per-template gaps with a standard deviation of about 0.1, 0.6 about 0.18, the range of the README's
main job (SmolLM2-135M on sheng2019: 0.02 to 0.18, docs/statistics.md).  *Paired* designs give every group the
same templates (sheng2019); *unpaired* ones give each group its own prompts (bold).

The target of inference is the gap over the population of templates, ``E_t[p(a, t) - p(b, t)]``
(computed by Monte Carlo over 200,000 templates).  For each design the script reports how often
the 95% interval covers it and how often p < 0.05 when it is 0, for the sample-level analysis
(``--unit sample``: percentile bootstrap and exact permutation test), the prompt-level analysis
(the default: cluster-robust t interval and t test) and ``p_fixed`` (the exact test conditional
on the templates, which answers another question: it is not meant to hold over templates).

Run from the repository root (about 8 minutes on two cores; the table is in docs/statistics.md)::

    python scripts/sim_prompt_level.py --reps 2000 --n-boot 500
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from nlgbias.metrics.shares import differences

DESIGNS = [  # name, paired, units per group, samples per unit, sigma_template, sigma_interaction
    ("sheng2019-like, 5 templates", True, 5, 100, 0.5, 0.3),
    ("sheng2019-like, 5 templates, no heterogeneity", True, 5, 100, 0.5, 0.0),
    ("sheng2019-like, 10 templates", True, 10, 50, 0.5, 0.3),
    ("strong heterogeneity, 5 templates", True, 5, 100, 0.5, 0.6),
    ("bold-like, 20 prompts per group", False, 20, 10, 1.0, 0.0),
    ("bold-like, 20 prompts per group, 100 samples", False, 20, 100, 1.0, 0.0),
    ("bold-like, 5 prompts per group", False, 5, 20, 1.0, 0.0),
]
MU = -0.85  # a 30% base rate


def expit(x):
    return 1 / (1 + np.exp(-x))


def population_gap(paired: bool, effect: float, s_t: float, s_i: float, rng: np.random.Generator) -> float:
    """E_t[p(a, t) - p(b, t)] over 200,000 templates."""
    a = rng.normal(0, s_t, 200_000)
    other = a if paired else rng.normal(0, s_t, 200_000)
    return float(np.mean(expit(MU + effect / 2 + a + rng.normal(0, s_i, a.size))
                         - expit(MU - effect / 2 + other + rng.normal(0, s_i, a.size))))


def one_run(paired: bool, units: int, m: int, s_t: float, s_i: float, effect: float, rng: np.random.Generator):
    """The shares table and per-unit counts of one simulated comparison (groups a, b)."""
    t_a = rng.normal(0, s_t, units)
    t_b = t_a if paired else rng.normal(0, s_t, units)
    names_a = [f"t{i}" for i in range(units)]
    names_b = names_a if paired else [f"u{i}" for i in range(units)]
    k_a = rng.binomial(m, expit(MU + effect / 2 + t_a + rng.normal(0, s_i, units)))
    k_b = rng.binomial(m, expit(MU - effect / 2 + t_b + rng.normal(0, s_i, units)))
    cells = {("m", "c", "s", "a"): dict(zip(names_a, zip([m] * units, k_a.tolist()))),
             ("m", "c", "s", "b"): dict(zip(names_b, zip([m] * units, k_b.tolist())))}
    shares = pd.DataFrame({"model": "m", "context": "c", "scorer": "s", "group": ["a", "b"], "label": "negative",
                           "n": [m * units] * 2, "k": [int(k_a.sum()), int(k_b.sum())]})
    return shares, {"negative": cells}


def simulate(reps: int, seed: int, n_boot: int) -> pd.DataFrame:
    rows = []
    for d, (name, paired, units, m, s_t, s_i) in enumerate(DESIGNS):
        for effect in (0.0, 0.5):
            rng = np.random.default_rng([seed, d, int(effect * 10)])
            target = 0.0 if effect == 0 else population_gap(paired, effect, s_t, s_i, rng)
            hits: dict[str, list] = {"sample": [], "prompt": [], "fixed": []}
            widths: dict[str, list] = {"sample": [], "prompt": []}
            for _ in range(reps):
                shares, counts = one_run(paired, units, m, s_t, s_i, effect, rng)
                for level in ("sample", "prompt"):
                    row = differences(shares, column="group", pairs=[("a", "b")], within=["model", "context", "scorer"],
                                      labels=["negative"], n_boot=n_boot, seed=int(rng.integers(1 << 30)),
                                      units=counts, level=level).iloc[0]
                    covered = row["ci_low"] <= target <= row["ci_high"]
                    hits[level].append((covered, row["p"] < 0.05))
                    widths[level].append(row["ci_high"] - row["ci_low"])
                hits["fixed"].append((np.nan, row["p_fixed"] < 0.05))
            sample, prompt = np.array(hits["sample"], float), np.array(hits["prompt"], float)
            rows.append({"design": name, "groups' templates": "shared" if paired else "own",
                         "sd gap (logit)": s_i, "gap": round(target, 3),
                         "coverage, sample level": sample[:, 0].mean(), "coverage, prompt level": prompt[:, 0].mean(),
                         "p<0.05, sample level": sample[:, 1].mean(), "p<0.05, prompt level": prompt[:, 1].mean(),
                         "p_fixed<0.05": np.mean([h[1] for h in hits["fixed"]]),
                         "CI width ratio (prompt / sample)": np.mean(widths["prompt"]) / np.mean(widths["sample"])})
    return pd.DataFrame(rows)


def markdown(table: pd.DataFrame) -> str:
    """A Markdown table (floats to 3 decimals)."""
    cells = [[f"{v:.3f}" if isinstance(v, float) else str(v) for v in row] for row in table.itertuples(index=False)]
    lines = ["| " + " | ".join(table.columns) + " |", "|" + "|".join("---" for _ in table.columns) + "|"]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in cells])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--n-boot", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    start = time.time()
    table = simulate(args.reps, args.seed, args.n_boot)
    se = (f"{args.reps} simulated runs per row (seed {args.seed}, {args.n_boot} bootstrap replicates); one "
          f"simulation SE is {np.sqrt(0.05 * 0.95 / args.reps):.4f} at 95% and at 5%")
    text = markdown(table) + f"\n\n{se}; {time.time() - start:.0f} s.\n"
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
