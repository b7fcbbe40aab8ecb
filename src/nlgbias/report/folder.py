"""Read a finished run's folder back (metrics.json, samples.parquet, manifest.json) to re-render it.

The files are the user's to move, copy and edit, so each is checked on the way in: a missing,
unreadable or malformed one gives one :class:`~nlgbias.errors.InputError` line naming the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import jinja2
import pandas as pd

from nlgbias.errors import InputError
from nlgbias.inputs import not_a_file, read_json_file, read_parquet_file, special_kind
from nlgbias.metrics.results import METRICS_FILE, Results
from nlgbias.report.html import Section, write_report
from nlgbias.store.export import refuse_special

NEEDED = (METRICS_FILE, "samples.parquet", "manifest.json")
MANIFEST_KEYS = ("run_id", "suite", "models", "statistics")


def _json_object(path: Path) -> dict:
    data = read_json_file(path)
    if not isinstance(data, dict):
        raise InputError(f"{path}: holds JSON that is not an object; rerun the run to rebuild it")
    return data


def read_run_folder(folder: str | Path) -> tuple[Results, pd.DataFrame, dict]:
    """``(results, samples, manifest)`` of a finished run in ``folder``.

    Raises
    ------
    InputError
        ``<file>: missing``, ``not valid JSON``, ``not a Parquet file`` or ``lacks <key>``.
    """
    folder = Path(folder)
    for name in NEEDED:
        if not (folder / name).is_file():
            if special_kind(folder / name) is not None:  # a FIFO would hang the read
                raise InputError(f"{folder / name}: {not_a_file(folder / name)}")
            raise InputError(f"{folder / name}: missing; run `nlgbias run ... --out {folder}` first")
    metrics_path = folder / METRICS_FILE
    _json_object(metrics_path)  # a clean one-line error for text that is not JSON
    try:
        results = Results.read(folder)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise InputError(f"{metrics_path}: not the metrics file of a run ({type(exc).__name__}: "
                         f"{' '.join(str(exc).split())[:80]}); rerun the run to rebuild it") from None
    manifest = _json_object(folder / "manifest.json")
    missing = [key for key in MANIFEST_KEYS if key not in manifest]
    if missing:
        raise InputError(f"{folder / 'manifest.json'}: lacks {', '.join(missing)}; rerun the run to rebuild it")
    samples = read_parquet_file(folder / "samples.parquet")
    return results, samples, manifest


def rerender_report(folder: str | Path, *, sections: Sequence[Section]) -> Path:
    """Write ``folder/report.html`` again from the run's outputs, with ``sections``
    (:func:`nlgbias.analyses.report_sections`); return its path."""

    folder = Path(folder)
    refuse_special(folder / "report.html")  # a FIFO or device there: refused before anything is read
    results, samples, manifest = read_run_folder(folder)
    try:
        write_report(folder / "report.html", results, samples, manifest, sections=sections)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, jinja2.UndefinedError) as exc:
        raise InputError(f"{folder}: metrics.json, samples.parquet and manifest.json do not fit together "
                         f"({type(exc).__name__}: {' '.join(str(exc).split())[:80]}); rerun the run to rebuild "
                         f"them") from None
    return folder / "report.html"
