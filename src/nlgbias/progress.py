"""Progress bars (tqdm, on stderr, with rate and ETA) and short notes, silent when quiet; a stage stopwatch."""

from __future__ import annotations

import sys
import time


class _Silent:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


class Progress:
    """Factory for progress bars and notes that respects ``--quiet``."""

    def __init__(self, *, quiet: bool = False) -> None:
        self.quiet = quiet

    def bar(self, desc: str, total: int, unit: str):
        """A bar with ``update(n)`` and ``close()``."""
        if self.quiet:
            return _Silent()
        from tqdm import tqdm

        return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, dynamic_ncols=True,
                    bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} "
                               "[{elapsed}<{remaining}, {rate_fmt}]")

    def note(self, message: str) -> None:
        """One line on stderr."""
        if not self.quiet:
            print(message, file=sys.stderr, flush=True)


class Stopwatch:
    """Seconds spent in each stage (model loading counts as generation)."""

    def __init__(self) -> None:
        self.laps: dict[str, float] = {}
        self._last = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.laps[name] = now - self._last
        self._last = now
