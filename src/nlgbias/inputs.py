"""Reading the text files a user gives us (sheets, name lists), with one-line errors."""

from __future__ import annotations

from pathlib import Path

from nlgbias.errors import InputError


def read_user_text(path: Path) -> str:
    """The file's text (UTF-8, a byte-order mark dropped).

    Raises
    ------
    InputError
        ``<path>: file not found`` or ``<path>: not UTF-8 text``.
    """
    if not path.is_file():
        raise InputError(f"{path}: file not found")
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text") from None
