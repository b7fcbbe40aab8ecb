"""Reading the text files a user gives us (sheets, name lists), with one-line errors."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from nlgbias.errors import InputError

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"))


def special_kind(path: str | os.PathLike) -> str | None:
    """What ``path`` is when it exists but is not a regular file (a symbolic link followed), else None.

    >>> special_kind("/")
    'a folder'
    >>> special_kind("/no/such/file") is None
    True
    """
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def not_a_file(path: str | os.PathLike) -> str:
    """Why ``path`` cannot be read as a file: ``file not found``, or ``is a FIFO (named pipe), not a
    regular file`` (a folder, a device, a socket), for a path that :meth:`Path.is_file` refused.

    >>> not_a_file("/no/such/file")
    'file not found'
    """
    kind = special_kind(path)
    if kind is None:
        return "file not found"
    return "is a folder; give a file" if kind == "a folder" else f"is {kind}, not a regular file; give a file"


def read_user_text(path: Path) -> str:
    """The file's text (UTF-8, a byte-order mark dropped).

    Raises
    ------
    InputError
        ``<path>: file not found`` (or not a regular file: :func:`not_a_file`) or ``<path>: not UTF-8 text``.
    """
    if not path.is_file():
        raise InputError(f"{path}: {not_a_file(path)}")
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text") from None


def read_parquet_file(path: Path):
    """The table in a Parquet file, or one line: ``<path>: not a readable Parquet file (...)``."""
    import pandas as pd

    try:
        return pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises several types for a damaged file; any of them means the same
        raise InputError(f"{path}: not a readable Parquet file ({type(exc).__name__}); rerun the run to rebuild "
                         f"it") from None


def parse_json(text: str, where: object):
    """The value of a JSON text, or one :class:`InputError` line naming ``where`` (and the line):
    not JSON, nested too deeply, or a number too long to read.

    >>> parse_json("[" * 100_000, "m.json")
    Traceback (most recent call last):
    ...
    nlgbias.errors.InputError: m.json: nested too deeply to be a file nlgbias wrote; rerun the run to rebuild it
    """

    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{where}:{exc.lineno}: not valid JSON ({exc.msg}); rerun the run to rebuild it") from None
    except RecursionError:
        raise InputError(f"{where}: nested too deeply to be a file nlgbias wrote; rerun the run to rebuild it") from None
    except ValueError as exc:  # an integer of more digits than Python converts (4,300)
        what = "a number too long to read" if "digits" in str(exc) else " ".join(str(exc).split())[:80]
        raise InputError(f"{where}: not valid JSON ({what}); rerun the run to rebuild it") from None


def read_json_file(path: Path):
    """The value in a JSON file, or one :class:`InputError` line (:func:`parse_json`; not UTF-8; unreadable)."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text; the run wrote JSON here") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    return parse_json(text, path)
