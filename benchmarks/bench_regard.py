"""Regard classifier: load time (fresh process) and scoring speed on this CPU.

    python benchmarks/bench_regard.py

Prints the load time of ``RegardScorer`` in a fresh interpreter and sentences/second over the
shipped dataset's 1,772 sentences repeated to 5,000 (batch 128, length-sorted), as they are
and cut to their first 8 words (sentence length drives the cost).
"""

from __future__ import annotations

import subprocess
import sys
import time

import numpy as np

LOAD = "import time; t = time.perf_counter(); from nlgbias.scorers.regard import RegardScorer; RegardScorer(); print(time.perf_counter() - t)"


def main() -> None:
    from nlgbias.scorers.regard import RegardScorer
    from nlgbias.training.dataset import load_dataset

    loads = [float(subprocess.run([sys.executable, "-c", LOAD], capture_output=True, text=True, check=True)
                   .stdout.strip().splitlines()[-1]) for _ in range(3)]
    scorer = RegardScorer()
    texts = load_dataset()["text"].tolist()
    texts = (texts * 3)[:5000]
    scorer.score(texts[:256])  # warm-up
    print(f"load (fresh process, imports included): {min(loads):.2f} s best of 3, {max(loads):.2f} s worst")
    short = [" ".join(t.split()[:8]) for t in texts]
    for name, batch in (("dataset sentences", texts), ("cut to 8 words", short)):
        tokens = np.mean([len(ids) for ids in scorer.tokenizer(batch[:1000])["input_ids"]])
        start = time.perf_counter()
        scored = scorer.score(batch)
        seconds = time.perf_counter() - start
        print(f"scoring {name} (mean {tokens:.1f} tokens): {len(batch)} in {seconds:.1f} s = "
              f"{len(batch) / seconds:.0f} sentences/s; "
              f"{int(scored['details'].map(lambda d: d.get('truncated', False)).sum())} truncated")


if __name__ == "__main__":
    main()
