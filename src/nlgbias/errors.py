"""Exceptions raised by nlgbias.

Every error a user can cause by bad input is an :class:`NlgbiasError`.  Its message is one
line that says *where* the problem is and *what* is wrong, and, where useful, what would be
accepted.  The command line prints it as ``Error: <message>`` and exits with code 2.

A message names an option in the caller's words: :func:`option` gives ``--model smollm2`` while
the command line runs (:func:`command_line_wording`) and ``models=['smollm2']`` from Python.
"""

from __future__ import annotations

import contextlib
import contextvars

_COMMAND_LINE = contextvars.ContextVar("nlgbias_command_line", default=False)
_NO_VALUE = object()


@contextlib.contextmanager
def command_line_wording():
    """Inside this block, :func:`option` names command-line flags (the CLI wraps every command in it)."""
    token = _COMMAND_LINE.set(True)
    try:
        yield
    finally:
        _COMMAND_LINE.reset(token)


def command_line() -> bool:
    """Whether the command line is running (its messages then name flags, not Python keywords)."""
    return _COMMAND_LINE.get()


def option(flag: str, value=_NO_VALUE, *, keyword: str | None = None, many: bool = False) -> str:
    """An option as the user wrote it: ``--flag value`` on the command line, ``keyword=value`` in Python.

    ``keyword`` defaults to the flag's name (``--batch-size`` -> ``batch_size``); ``many``: the
    Python keyword takes a list (``--model x`` -> ``models=['x']``, with ``keyword="models"``).

    >>> option("--model", "smollm2", keyword="models", many=True)
    "models=['smollm2']"
    >>> option("--batch-size", 0)
    'batch_size=0'
    >>> with command_line_wording():
    ...     option("--model", "smollm2", keyword="models", many=True)
    '--model smollm2'
    """
    if command_line():
        return flag if value is _NO_VALUE else f"{flag} {value}"
    keyword = keyword or flag.lstrip("-").replace("-", "_")
    if value is _NO_VALUE:
        return f"{keyword}="
    return f"{keyword}=[{value!r}]" if many else f"{keyword}={value!r}"


class NlgbiasError(Exception):
    """Base class for errors caused by input the user gave us."""


class SuiteError(NlgbiasError):
    """A probe suite (YAML) could not be found or is invalid."""


class BackendError(NlgbiasError):
    """A model could not be found, loaded or reached."""


class ScorerError(NlgbiasError):
    """A scorer is unknown, unavailable, or was given unusable input."""


class ScorerUnavailable(ScorerError):
    """A known scorer that cannot run here (e.g. a package it needs is not installed)."""


class StoreError(NlgbiasError):
    """The run store or an output folder cannot be used."""


class InputError(NlgbiasError):
    """A file or option (a command-line flag or a Python argument) is unusable."""
