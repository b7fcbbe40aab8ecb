"""User strings that become part of a file name, checked before any file is written.

An annotator name becomes ``sheet-<name>.csv``; a name like ``../../x`` or ``/tmp/x`` would
write outside the output folder, a NUL character or a name of thousands of characters would
fail half way.  :func:`check_file_name` accepts letters and digits (of any script), ``-``,
``_`` and ``.``, starting with a letter or digit, at most :data:`MAX_NAME_LENGTH` characters;
anything else is one :class:`~nlgbias.errors.InputError` line.  Names that only appear inside
files (suite and model display names, titles) are escaped where they are shown instead.
"""

from __future__ import annotations

import re
from typing import Iterable

from nlgbias.errors import InputError

MAX_NAME_LENGTH = 64
SAFE_NAME = re.compile(r"[^\W_][\w.-]*")
RULE = f"use letters, digits, '-', '_' and '.', starting with a letter or digit, at most {MAX_NAME_LENGTH} characters"


def shown(value: object, limit: int = 40) -> str:
    """``value`` as a short one-line Python literal for a message (control characters escaped).

    >>> shown("a" * 100)
    "'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...' (100 characters)"
    >>> shown("a\\x00b")
    "'a\\\\x00b'"
    """
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]!r}"[:-1] + f"...' ({len(value)} characters)"
    return repr(value)


def is_safe_name(value: object) -> bool:
    """Whether ``value`` can be used as (part of) a file name as it is."""
    return (isinstance(value, str) and len(value) <= MAX_NAME_LENGTH and SAFE_NAME.fullmatch(value) is not None
            and value not in (".", ".."))


def check_file_name(value: object, where: str, *, pattern: str = "{}") -> str:
    """Return ``value`` if it is a safe file name part, else raise one line naming ``where``.

    ``pattern`` shows the file the name becomes (``sheet-{}.csv``).

    >>> check_file_name("a1", "--annotators")
    'a1'
    >>> check_file_name("../../evil", "--annotators", pattern="sheet-{}.csv")
    Traceback (most recent call last):
    ...
    nlgbias.errors.InputError: --annotators '../../evil': a name here becomes a file name (sheet-NAME.csv); use letters, digits, '-', '_' and '.', starting with a letter or digit, at most 64 characters
    """
    if not is_safe_name(value):
        raise InputError(f"{where} {shown(value)}: a name here becomes a file name ({pattern.format('NAME')}); {RULE}")
    assert isinstance(value, str)
    return value


def check_file_names(values: Iterable[object], where: str, *, pattern: str = "{}") -> list[str]:
    """:func:`check_file_name` for each of ``values``."""
    return [check_file_name(value, where, pattern=pattern) for value in values]


__all__ = ["MAX_NAME_LENGTH", "RULE", "check_file_name", "check_file_names", "is_safe_name", "shown"]
