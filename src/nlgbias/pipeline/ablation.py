"""Decoding ablation (Kirk et al. 2021, Appendix C): job diversity over a top-k x temperature grid.

``decoding_grid`` runs an occupation suite once per grid cell (each cell is an ordinary run in
its own folder, so it resumes and caches like any run), then measures distinct jobs and the Gini
coefficient per cell with :func:`nlgbias.metrics.occupations.decoding_ablation`.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

import pandas as pd

from nlgbias.analyses.builtin import occupation_tables
from nlgbias.errors import InputError
from nlgbias.metrics.occupations import decoding_ablation
from nlgbias.pipeline.audit import run
from nlgbias.sampling import MAX_TOP_K
from nlgbias.store import write_csv
from nlgbias.validate import check_out_folder

MAX_GRID_VALUES = 20  # per axis of the grid


def parse_grid(top_k: str, temperature: str) -> tuple[list[int], list[float]]:
    """``"10,50,100"`` and ``"0.7,1.0"`` -> ([10, 50, 100], [0.7, 1.0]); one-line errors.

    >>> parse_grid("0,50", "0.7, 1")
    ([0, 50], [0.7, 1.0])
    """
    ks, ts = [], []
    for part in [p.strip() for p in top_k.split(",") if p.strip()]:
        try:
            value = int(part)
        except ValueError:
            raise InputError(f"--top-k {part}: must be a whole number >= 0 (0 = no top-k)") from None
        if value < 0:
            raise InputError(f"--top-k {part}: must be a whole number >= 0 (0 = no top-k)")
        if value > MAX_TOP_K:
            raise InputError(f"--top-k {part}: at most {MAX_TOP_K:,} (more than any vocabulary)")
        ks.append(value)
    for part in [p.strip() for p in temperature.split(",") if p.strip()]:
        try:
            value = float(part)
        except ValueError:
            raise InputError(f"--temperature {part}: must be a number > 0") from None
        if not math.isfinite(value) or value <= 0 or value > 100:
            raise InputError(f"--temperature {part}: must be a number > 0 (and at most 100)")
        ts.append(value)
    if not ks or not ts:
        raise InputError("--top-k and --temperature: give at least one value each, e.g. --top-k 10,50 --temperature 0.7,1.0")
    for flag, values in (("--top-k", ks), ("--temperature", ts)):
        if len(set(values)) > MAX_GRID_VALUES:
            raise InputError(f"{flag}: {len(set(values))} values; at most {MAX_GRID_VALUES} (each pair of values is "
                             f"a run of its own)")
    return sorted(set(ks)), sorted(set(ts))


def decoding_grid(suite: str, *, models: Sequence[str], top_k: Sequence[int], temperature: Sequence[float],
                  samples: int, out: str | Path, seed: int = 0, n_boot: int = 1000, quiet: bool = False,
                  **run_options) -> pd.DataFrame:
    """Run ``suite`` for every (top_k, temperature) and measure job diversity per cell.

    ``n_boot`` bootstrap replicates serve every interval: each cell's run and the grid's Gini.

    Returns
    -------
    pandas.DataFrame
        :func:`~nlgbias.metrics.occupations.decoding_ablation`'s table: one row per (model,
        gender, top_k, temperature) with ``n_calls, n_titled, n_mentions, n_jobs, gini, ci_low,
        ci_high, no_title_rate``; also written to ``out/ablation.csv``.
    """
    out = check_out_folder(out)
    jobs_frames, calls_frames = [], []
    for k in top_k:
        for t in temperature:
            result = run(suite, models=models, samples=samples, seed=seed, out=out / f"top_k={k},temperature={t:g}",
                         top_k=k, temperature=t, scorers=["occupation"], n_boot=n_boot, quiet=quiet, **run_options)
            jobs, calls = occupation_tables(result.samples)
            jobs_frames.append(jobs.assign(top_k=k, temperature=t))
            calls_frames.append(calls.assign(top_k=k, temperature=t))
    table = decoding_ablation(pd.concat(jobs_frames, ignore_index=True), pd.concat(calls_frames, ignore_index=True),
                              n_boot=n_boot, ci="basic", seed=seed)
    write_csv(out / "ablation.csv", table)
    return table
