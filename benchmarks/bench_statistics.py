"""Time of a run's share and gap statistics at prompt level beside sample level, in one run.

Two synthetic scored tables of the sizes real runs reach: sheng2019-like (6 groups x 5 shared
templates x 1,000 samples x 3 scorers = 90,000 rows) and bold-like (43 groups x 550 prompts of
their own x 1 sample x 5 scorers = 118,250 rows).  ``compute_metrics`` with 2,000 bootstrap
replicates at ``level="sample"`` (the bootstrap and exact tests) and ``level="prompt"`` (the
default); the ratio is the price of counting prompts.

    python benchmarks/bench_statistics.py
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from nlgbias.metrics import compute_metrics

LABELS = ["negative", "neutral", "positive"]


def scored(groups: int, prompts: int, samples: int, scorers: int, shared: bool, seed: int = 0) -> pd.DataFrame:
    """A scored table: ``groups`` x ``prompts`` (shared templates, or each group's own) x ``samples``."""
    rng = np.random.default_rng(seed)
    group = np.repeat(np.arange(groups), prompts * samples)
    unit = np.tile(np.repeat(np.arange(prompts), samples), groups)
    template = [f"t{u}" if shared else f"g{g}p{u}" for g, u in zip(group, unit)]
    base = pd.DataFrame({"model": "m", "context": "c", "group": [f"g{g}" for g in group], "template_id": template,
                         "is_empty": False})
    return pd.concat([base.assign(scorer=f"s{s}", label=rng.choice(LABELS, len(base))) for s in range(scorers)],
                     ignore_index=True)


def main() -> None:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()  # no options; --help says what it times
    for name, shape in (("sheng2019-like", (6, 5, 1000, 3, True)), ("bold-like", (43, 550, 1, 5, False))):
        table = scored(*shape)
        comparisons = [(f"g{i}", f"g{i + 1}") for i in range(shape[0] - 1)]
        seconds = {}
        for level in ("sample", "prompt"):
            start = time.perf_counter()
            compute_metrics(table, comparisons=comparisons, n_boot=2000, level=level)
            seconds[level] = time.perf_counter() - start
        print(f"{name}: {len(table):,} rows; sample level {seconds['sample']:.1f} s, prompt level "
              f"{seconds['prompt']:.1f} s, ratio {seconds['prompt'] / seconds['sample']:.2f}")


if __name__ == "__main__":
    main()
