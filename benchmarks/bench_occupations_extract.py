"""Occupation extraction speed: continuations per second on one CPU core.

Times ``OccupationScorer.extract`` and ``OccupationScorer.score`` (which also builds the
``label, score, details`` table) on 20,000 continuations, best of ``--repeats`` runs, after one
warm-up pass.  The texts are the sentences of a corpus (``--corpus``: a Parquet file with a
``sentence`` column, e.g. ``samples.parquet`` of a kirk2021 run) or, by default, the hand-labelled
gold continuations shipped with nlgbias, cycled up to ``--n``.  Loading the lexicon is timed apart.

Usage::

    python benchmarks/bench_occupations_extract.py [--corpus samples.parquet] [--n 20000] [--out out.json]

The target is at least 2,000 continuations per second.
"""

from __future__ import annotations

import argparse
import csv
import json
import platform
import time
from importlib import resources
from itertools import cycle, islice

from nlgbias.scorers.occupations import OccupationScorer

TARGET = 2000


def gold_texts() -> list[str]:
    text = resources.files("nlgbias.data").joinpath("occupations/gold.csv").read_text(encoding="utf-8")
    return [row["text"] for row in csv.DictReader(text.splitlines())]


def corpus_texts(path: str) -> list[str]:
    import pandas as pd

    return [t for t in pd.read_parquet(path, columns=["sentence"])["sentence"] if isinstance(t, str)]


def best_rate(fn, texts: list[str], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn(texts)
        best = min(best, time.perf_counter() - start)
    return len(texts) / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", help="Parquet file with a 'sentence' column (default: gold.csv texts)")
    parser.add_argument("--n", type=int, default=20000, help="continuations to extract (default 20000)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", help="write the results as JSON here")
    args = parser.parse_args()

    base = corpus_texts(args.corpus) if args.corpus else gold_texts()
    texts = list(islice(cycle(base), args.n))

    start = time.perf_counter()
    scorer = OccupationScorer()
    load_s = time.perf_counter() - start
    scorer.extract(texts[:1000])  # warm-up

    results = {
        "texts": len(texts),
        "distinct_texts": len(set(texts)),
        "source": args.corpus or "nlgbias/data/occupations/gold.csv (cycled)",
        "lexicon_load_s": round(load_s, 3),
        "extract_per_s": round(best_rate(scorer.extract, texts, args.repeats)),
        "score_per_s": round(best_rate(scorer.score, texts, args.repeats)),
        "scorer_version": scorer.version,
        "python": platform.python_version(),
        "machine": platform.processor() or platform.machine(),
    }
    print("| step | continuations/s |")
    print("|---|---:|")
    print(f"| extract | {results['extract_per_s']:,} |")
    print(f"| score (with table) | {results['score_per_s']:,} |")
    print(f"\n{results['texts']:,} texts ({results['distinct_texts']:,} distinct) from {results['source']}; "
          f"lexicon loaded in {results['lexicon_load_s']} s; target >= {TARGET:,}/s: "
          f"{'met' if results['extract_per_s'] >= TARGET else 'NOT met'}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
