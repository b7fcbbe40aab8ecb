"""Write files atomically: a temp file in the same folder, then ``os.replace``.

Every file nlgbias writes (run outputs, reports, exports, annotation sheets, suites) goes through
:func:`atomic_write`, so a process killed while writing never leaves a half-written file; the
next run rebuilds it.  The ``write_*`` functions are :func:`atomic_write` for one format each.
"""

from __future__ import annotations

import errno
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from nlgbias.errors import StoreError
from nlgbias.inputs import special_kind


def refuse_special(path: str | Path) -> None:
    """Raise :class:`StoreError` when ``path`` exists and is not a regular file (a device such as
    ``/dev/full``, a FIFO, a socket, a folder): a rename would replace it with a regular file."""
    kind = special_kind(path)
    if kind is not None:
        raise StoreError(f"{path}: is {kind}, not a regular file, so nlgbias does not write over it; nothing "
                         f"was written: remove it or write elsewhere")


def atomic_write(path: str | Path, write: Callable[[str], object]) -> Path:
    """Call ``write(tmp)`` on a temporary path in ``path``'s folder, then move it onto ``path``.

    Either the whole new file is at ``path`` afterwards, or (``write`` raised, the process was
    killed) the old one is untouched; the temporary file never stays behind.  The file gets the
    permissions of a newly created file (``0o666`` minus the umask).  Returns ``path``.  A ``path``
    that exists and is not a regular file (a device, a FIFO, a socket, a folder) is refused
    (:func:`refuse_special`) before anything is written.
    """
    path = Path(path)
    refuse_special(path)
    tmp = None
    try:
        handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        os.close(handle)
        write(tmp)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except OSError as exc:
        if not out_of_space(exc):
            raise
        raise StoreError(f"{path.parent}: disk full (no space left on device) while writing {path.name}; "
                         f"the file was left as it was: free space, then rerun the same command") from None
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
    return path


def out_of_space(exc: BaseException) -> bool:
    """Whether an error means the disk (or the user's quota) is full."""
    return getattr(exc, "errno", None) in (errno.ENOSPC, errno.EDQUOT) or "No space left on device" in str(exc)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text(path: Path, text: str) -> Path:
    """Write UTF-8 text atomically."""
    return atomic_write(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))


def write_bytes(path: Path, data: bytes) -> Path:
    """Write bytes atomically."""
    return atomic_write(path, lambda tmp: Path(tmp).write_bytes(data))


def write_json(path: Path, data: Any) -> Path:
    """Write JSON (NaN written as null) atomically, indented, keys in insertion order."""
    return write_text(path, json.dumps(_clean(data), indent=2, ensure_ascii=False) + "\n")


def write_parquet(path: Path, table: pd.DataFrame) -> Path:
    """Write a DataFrame as Parquet (pyarrow, no index) atomically."""
    return atomic_write(path, lambda tmp: table.to_parquet(tmp, index=False, engine="pyarrow"))


def write_jsonl(path: Path, table: pd.DataFrame) -> Path:
    """Write one JSON object per row atomically (NaN as null)."""
    def write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as out:
            for record in table.to_dict(orient="records"):
                out.write(json.dumps(_clean(record), ensure_ascii=False) + "\n")
    return atomic_write(path, write)


def details_as_objects(table: pd.DataFrame) -> pd.DataFrame:
    """A copy whose ``<scorer>_details`` columns (JSON text, as Parquet holds them) are decoded to
    objects, so JSONL writes each as a JSON object, not as a string holding JSON.

    >>> details_as_objects(pd.DataFrame({"vader_details": ['{"compound": 0.5}', None]}))["vader_details"].tolist()
    [{'compound': 0.5}, None]
    """
    table = table.copy()
    for column in [c for c in table.columns if str(c).endswith("_details")]:
        values = [json.loads(v) if isinstance(v, str) else v if isinstance(v, dict) else None for v in table[column]]
        table[column] = pd.Series(values, index=table.index, dtype=object)
    return table


def write_csv(path: Path, table: pd.DataFrame, *, float_format: str | None = "%.10g") -> Path:
    """Write a DataFrame as CSV (no index, floats to 10 significant digits) atomically."""
    return atomic_write(path, lambda tmp: table.to_csv(tmp, index=False, float_format=float_format))


def _clean(value: Any) -> Any:
    """JSON-safe copy: NaN/inf to None, numpy scalars to Python."""
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        try:
            value = value.item()
        except (ValueError, AttributeError):
            pass
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is pd.NA or value is pd.NaT:
        return None
    return value


__all__ = ["atomic_write", "refuse_special", "details_as_objects", "write_bytes", "write_csv", "write_json", "write_jsonl",
           "write_parquet", "write_text"]
