"""Train the v2 regard classifiers for shipping: the shipped recipe on the train + dev splits of
``regard-v2.csv``, on the CPU with ``train-regard``'s settings (2 threads, seed 0), written to
``src/nlgbias/data/regard/classifier-v2-3class`` and ``classifier-v2-4class``.

    python scripts/regard_v2/ship.py [--classes 3 4]

Takes about 10 minutes per classifier on 2 idle cores (hours on a loaded machine). Then, to make v2
the default: set ``RELEASE = 2`` in ``nlgbias/scorers/regard.py`` (``regard``/``regard4`` and the
data ``train-regard`` uses by default follow it; ``regard-v1``/``regard4-v1`` stay on release 1),
run ``scripts/regard_v2/evaluate_shipped.py`` (test figures and the leave-one-source-out table into
``evaluation.json``), check ``nlgbias train-regard --out DIR`` says "identical", and regenerate the
golden files (``NLGBIAS_WRITE_GOLDEN=1``) after reading their diff.
"""

from __future__ import annotations

import argparse
import json
import time

from nlgbias.scorers.regard import classifier_dir
from nlgbias.training import build_classifier
from nlgbias.training.dataset import dataset_dir, load_dataset


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--classes", type=int, nargs="+", default=[3, 4], choices=[3, 4])
    args = parser.parse_args()
    data = load_dataset(dataset_dir() / "regard-v2.csv")
    for classes in args.classes:
        started = time.time()
        result = build_classifier(data, classifier_dir(classes, 2), classes=classes, seed=0, version="2")
        print(classes, json.dumps({**result, "seconds": round(time.time() - started)}), flush=True)


if __name__ == "__main__":
    main()
