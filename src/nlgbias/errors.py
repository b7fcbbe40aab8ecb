"""Exceptions raised by nlgbias.

Every error a user can cause by bad input is an :class:`NlgbiasError`.  Its message is one
line that says *where* the problem is and *what* is wrong, and, where useful, what would be
accepted.  The command line prints it as ``Error: <message>`` and exits with code 2.
"""


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
    """A file or option given on the command line is unusable."""
