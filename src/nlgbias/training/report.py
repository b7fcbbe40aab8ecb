"""What ``nlgbias train-regard`` prints: the data it trained on, the user's items, test figures side by side.

In: :func:`nlgbias.training.build_classifier`'s result dict and the training table of
:func:`nlgbias.training.dataset.training_data`.  Out: lines of text.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

import pandas as pd

from nlgbias.training.dataset import extra_counts


def _figure(value: float) -> str:
    return "–" if value is None or not math.isfinite(value) else f"{value:.3f}"


def training_lines(result: dict, data: pd.DataFrame, *, classes: int, extra_paths: Sequence[str | Path],
                   out: str | Path) -> list[str]:
    """The summary lines of a training run.

    The first: how many sentences were trained on (how many of them the user's), the test split's
    figures and, beside them, those on the user's held-out items (with the shipped classifier's
    accuracy on the same items, for comparison).  Then one per ``--extra-data`` table: its rows,
    how many were trained on, held out and left out.
    """
    counts = extra_counts(data, classes)
    yours = sum(c["train"] for c in counts)
    tested = (f"test accuracy {_figure(result['test_accuracy'])}, macro-F1 {_figure(result['test_macro_f1'])}"
              if result["n_test"] else "no test split, so no test figures")
    if result.get("n_own_test"):
        tested += (f"; your {result['n_own_test']} held-out items: accuracy {_figure(result['own_test_accuracy'])}, "
                   f"macro-F1 {_figure(result['own_test_macro_f1'])} (the shipped classifier: accuracy "
                   f"{_figure(result['shipped_own_test_accuracy'])})")
    soft = f" and {result['n_soft']} with a teacher's labels" if result.get("n_soft") else ""
    lines = [f"trained on {result['n_train']} sentences (train + dev" + (f"; {yours} of them yours" if counts else "")
             + f"){soft}; {tested}; wrote {out}"]
    for path, c in zip(extra_paths, counts):
        lines.append(f"your items in {path}: {c['rows']} rows, {c['labelled']} with a {classes}-class regard label: "
                     f"{c['train']} trained on, {c['held_out']} held out to test"
                     + (f" (each with both predictions in {Path(out) / 'own_test.csv'})" if c["held_out"] else
                        " (none: --holdout 0 or too few items, so no figure on your own text)")
                     + f"; {c['left_out']} left out (no majority label in this view)")
    return lines


__all__ = ["training_lines"]
