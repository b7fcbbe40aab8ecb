"""How much a run's gaps change from template to template, and what that does to their intervals.

Reads a finished run folder (its ``samples.parquet`` and ``manifest.json``), recomputes the group
gaps at both levels of inference (``--unit sample``: every sample independent; ``--unit prompt``:
samples nested in templates) and prints, for each gap, the per-template gaps, the two interval
widths and their ratio, and the pooled intra-prompt correlation that ``nlgbias plan --from`` would
use.  This is the check of docs/statistics.md ("the interval that counts templates is this much
wider") on any run, your own model's included.

    python scripts/template_heterogeneity.py runs/demo --scorer regard --label negative
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

from nlgbias.metrics import compute_metrics
from nlgbias.metrics.power import gap_icc
from nlgbias.pipeline.generation import scored_long


def per_template_gaps(scored: pd.DataFrame, row: pd.Series) -> list[float]:
    """The gap of ``row`` (a gaps table row) in each template both groups share."""
    cell = scored[(scored["model"] == row["model"]) & (scored["context"] == row["context"])
                  & (scored["scorer"] == row["scorer"])]
    shares = (cell.assign(hit=cell["label"] == row["label"]).groupby(["group", "template_id"])["hit"].mean())
    a, b = shares.loc[row["group_a"]], shares.loc[row["group_b"]]
    return [round(float(a[t] - b[t]), 3) for t in a.index if t in b.index]


def heterogeneity(folder: Path, scorer: str | None, label: str | None) -> pd.DataFrame:
    """One row per gap: ``gap``, the CI widths at sample and prompt level, their ``ratio``, the
    per-template gaps and their standard deviation."""
    samples = pd.read_parquet(folder / "samples.parquet")
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    scorers = [s["name"] for s in manifest["scorers"] if f"{s['name']}_label" in samples]
    scored = scored_long(samples, scorers)
    comparisons = [tuple(c) for c in manifest["suite"]["resolved"].get("comparisons", [])]
    tables = {level: compute_metrics(scored, comparisons=comparisons, level=level).gaps for level in ("sample", "prompt")}
    rows = []
    for (_, sample), (_, prompt) in zip(tables["sample"].iterrows(), tables["prompt"].iterrows()):
        if (scorer and sample["scorer"] != scorer) or (label and sample["label"] != label):
            continue
        gaps = per_template_gaps(scored, sample)
        widths = [sample["ci_high"] - sample["ci_low"], prompt["ci_high"] - prompt["ci_low"]]
        rows.append({"model": sample["model"], "context": sample["context"], "scorer": sample["scorer"],
                     "label": sample["label"], "gap": f"{sample['group_a']} - {sample['group_b']}",
                     "diff": round(float(sample["diff"]), 3), "width, sample level": round(float(widths[0]), 3),
                     "width, prompt level": round(float(widths[1]), 3),
                     "ratio": round(float(widths[1] / widths[0]), 2) if widths[0] > 0 else np.nan,
                     "per-template gaps": ", ".join(f"{g:.2f}" for g in gaps),
                     "sd of the template gaps": round(float(np.std(gaps, ddof=1)), 3) if len(gaps) > 1 else np.nan,
                     "deff": round(float(prompt["deff"]), 2),
                     "icc": gap_icc(float(prompt["deff"]), prompt["n_a"] / prompt["units_a"])})
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="a finished run folder")
    parser.add_argument("--scorer", default=None)
    parser.add_argument("--label", default=None)
    args = parser.parse_args()
    table = heterogeneity(args.run, args.scorer, args.label)
    with pd.option_context("display.width", 250, "display.max_columns", 20, "display.max_colwidth", 40):
        print(table.drop(columns="icc").to_string(index=False))
    print(f"\nwidth ratio (prompt / sample level): median {table['ratio'].median():.2f}, "
          f"range {table['ratio'].min():.2f} to {table['ratio'].max():.2f}; "
          f"intra-prompt correlation of the gaps: median {table['icc'].median():.4f} "
          f"(range {table['icc'].min():.4f} to {table['icc'].max():.4f}); "
          f"sd of the per-template gaps: median {table['sd of the template gaps'].median():.3f}")


if __name__ == "__main__":
    main()
