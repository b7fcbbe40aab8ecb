"""Regard classifier: load time (fresh process) and scoring speed on this CPU.

    python benchmarks/bench_regard.py

Prints the load time of ``RegardScorer`` in a fresh interpreter and sentences/second over the
shipped dataset's 1,772 sentences repeated to 5,000 (batch 128, length-sorted).
"""

from __future__ import annotations

import subprocess
import sys
import time

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
    start = time.perf_counter()
    scored = scorer.score(texts)
    seconds = time.perf_counter() - start
    print(f"load (fresh process, imports included): {min(loads):.2f} s best of 3, {max(loads):.2f} s worst")
    print(f"scoring: {len(texts)} sentences in {seconds:.1f} s = {len(texts) / seconds:.0f} sentences/s; "
          f"{int(scored['details'].map(lambda d: d.get('truncated', False)).sum())} truncated")


if __name__ == "__main__":
    main()
