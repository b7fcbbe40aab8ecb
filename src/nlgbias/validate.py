"""Check run options on entry, before any suite, store or model is touched.

``audit.run()`` and the command line both call :func:`check_run_options`; a bad value raises
:class:`~nlgbias.errors.InputError` with one line that names the option.  ``flags=True`` names
the command-line flags (``--timeout``), ``flags=False`` the Python keywords (``timeout=``), and
``flags=None`` (the default) whichever the caller used (:func:`nlgbias.errors.option`).
"""

from __future__ import annotations

import errno
import math
import os
import re
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

from nlgbias.errors import InputError, command_line, option
from nlgbias.inputs import special_kind
from nlgbias.urls import redact, refuse_credentials

DEVICE_PATTERN = re.compile(r"^(auto|cpu|mps|cuda(:[0-9]+)?)$")


def _name(option: str, flags: bool) -> str:
    return f"--{option.replace('_', '-')}" if flags else f"{option}="


def _flags(flags: bool | None) -> bool:
    return command_line() if flags is None else flags


def _number(value, option: str, flags: bool, *, whole: bool) -> float:
    name = _name(option, flags)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (whole and not isinstance(value, int)):
        raise InputError(f"{name}{' ' if flags else ''}{value!r}: must be a {'whole ' if whole else ''}number")
    if not math.isfinite(value):
        raise InputError(f"{name}{' ' if flags else ''}{value}: must be a finite number")
    return value


def at_least(value, minimum, option: str, *, flags: bool | None = None, whole: bool = True, why: str = "") -> None:
    """Raise unless ``value`` is a number >= ``minimum`` (a whole number unless ``whole=False``)."""
    flags = _flags(flags)
    _number(value, option, flags, whole=whole)
    if value < minimum:
        sep = " " if flags else ""
        kind = "a whole number of at least" if whole else "at least"
        raise InputError(f"{_name(option, flags)}{sep}{value}: must be {kind} {minimum}{why}")


# Upper bounds of options whose larger values can only be mistakes (a typo, a value in other units):
# each would take days, terabytes or thousands of threads.  ``--help`` names them.
AUTO = "auto"  # --batch-size auto (sized by nlgbias.models.batching)
LIMITS = {
    "samples": 100_000,       # samples per prompt and model (a run of sheng2019: 6 million samples)
    "max_samples": 100_000,   # --until-mde's budget, per prompt
    "batch_size": 100_000,
    "n_boot": 1_000_000,      # bootstrap replicates per interval
    "min_n": 1_000_000_000,
    "concurrency": 1024,      # requests in flight per server
    "timeout": 86_400.0,      # seconds per request (a day)
    "max_retries": 100,
    "cooldown": 86_400.0,     # seconds
    "workers": 10_000,        # Ray actors
    "worker_cpus": 1024.0,
    "worker_gpus": 64.0,
    "epochs": 1000,
    "seeds": 100,
}


def at_most(value, maximum, option: str, *, flags: bool | None = None, why: str = "") -> None:
    """Raise unless ``value`` is at most ``maximum`` (checked after :func:`at_least`)."""
    flags = _flags(flags)
    if value > maximum:
        sep = " " if flags else ""
        limit = f"{maximum:,}" if isinstance(maximum, int) else f"{maximum:,g}"
        raise InputError(f"{_name(option, flags)}{sep}{value:,}: at most {limit}{why}")


def bounded(value, minimum, option: str, *, flags: bool | None = None, whole: bool = True, why: str = "",
            unit: str = "") -> None:
    """:func:`at_least` ``minimum`` and :func:`at_most` the option's :data:`LIMITS` entry (``unit``: words after
    the limit, e.g. `` per prompt``)."""
    at_least(value, minimum, option, flags=flags, whole=whole, why=why)
    at_most(value, LIMITS[option], option, flags=flags, why=unit or why)


def within(value, low, high, option: str, *, flags: bool | None = None, closed: bool = False,
           example: str = "") -> None:
    """Raise unless ``value`` is a number in ``(low, high)`` (``[low, high]`` with ``closed``)."""
    flags = _flags(flags)
    _number(value, option, flags, whole=False)
    inside = low <= value <= high if closed else low < value < high
    if not inside:
        sep = " " if flags else ""
        where = f"from {low:g} to {high:g}" if closed else f"between {low:g} and {high:g}"
        raise InputError(f"{_name(option, flags)}{sep}{value:g}: must be {where}{', e.g. ' + example if example else ''}")


def check_device(device: str, *, flags: bool | None = None) -> None:
    """``auto``, ``cpu``, ``mps``, ``cuda`` or ``cuda:N``; CUDA and MPS must be present."""
    flags = _flags(flags)
    name = _name("device", flags)
    sep = " " if flags else ""
    if not isinstance(device, str) or not DEVICE_PATTERN.match(device):
        raise InputError(f"{name}{sep}{device}: unknown device; use auto, cpu, cuda, cuda:N or mps")
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise InputError(f"{name}{sep}{device}: this machine has no usable CUDA device; use {name}{sep}cpu or auto")
        index = int(device.partition(":")[2] or 0)
        if index >= torch.cuda.device_count():
            raise InputError(f"{name}{sep}{device}: only {torch.cuda.device_count()} CUDA device(s) here")
    if device == "mps":
        import torch

        if not torch.backends.mps.is_available():
            raise InputError(f"{name}{sep}{device}: MPS is not available here; use {name}{sep}cpu or auto")


def check_url(url: str, where: str) -> None:
    """A server base URL must be ``http://HOST...`` or ``https://HOST...``, without credentials
    (``user:key@``: the key goes in the variable named by ``--api-key-env``)."""

    try:
        parts = urlsplit(url)
    except ValueError:  # e.g. an unclosed IPv6 bracket
        parts = urlsplit("")
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise InputError(f"{redact(where)}: {redact(url)!r} is not a server URL; write it with its scheme, e.g. "
                         f"http://127.0.0.1:8000/v1")
    refuse_credentials(url, where)


def server_urls(value, where: str) -> list[str]:
    """The base URLs of ``--api-base`` values: one URL, a comma-separated list, or a sequence of either.

    Each URL is checked (:func:`check_url`), its trailing ``/`` dropped; an empty item and the
    same URL twice are refused, in one line that names ``where``.

    >>> server_urls("http://a:8000/v1, http://b:8000/v1/", "--api-base")
    ['http://a:8000/v1', 'http://b:8000/v1']
    """
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, (list, tuple)) or not all(isinstance(v, str) for v in values):
        raise InputError(f"{where}: {value!r} is not a server URL or a list of them")
    urls: list[str] = []
    for text in values:
        items = [item.strip() for item in text.split(",")]
        if "" in items:

            raise InputError(f"{where}: {redact(text)!r} has an empty item; separate server URLs with single commas, e.g. "
                             f"http://127.0.0.1:8000/v1,http://127.0.0.1:8001/v1")
        for url in items:
            check_url(url, where)
            url = url.rstrip("/")
            if url in urls:
                raise InputError(f"{where}: {url} is given twice; give each server once")
            urls.append(url)
    if not urls:
        raise InputError(f"{where}: give at least one server URL")
    return urls


def check_batch_size(value, *, flags: bool | None = None) -> None:
    """``auto`` or a whole number from 1 to ``LIMITS["batch_size"]``."""
    MAX_BATCH_SIZE = LIMITS["batch_size"]

    flags = _flags(flags)
    if value == AUTO:
        return
    name, sep = _name("batch_size", flags), " " if flags else ""
    if isinstance(value, str):
        raise InputError(f"{name}{sep}{value!r}: must be a whole number of at least 1, or {AUTO}")
    at_least(value, 1, "batch_size", flags=flags, why=f", or {AUTO}")
    if value > MAX_BATCH_SIZE:
        raise InputError(f"{name}{sep}{value}: must be at most {MAX_BATCH_SIZE:,} (no device holds a larger batch); "
                         f"{AUTO} sizes it from free GPU memory")


def check_out_folder(out, *, flag: str = "--out", keyword: str | None = None, entries: bool = True) -> Path:
    """An output folder as ``Path``, checked without creating anything: given (not ``""``), no NUL
    character, not a file, and writable (or creatable: its nearest existing parent is a writable folder).
    With ``entries``, a folder that holds a device, FIFO or socket is refused (:func:`refuse_special_entries`).

    >>> check_out_folder("")
    Traceback (most recent call last):
    ...
    nlgbias.errors.InputError: out='': give a folder (an empty value would mean the current folder)
    """
    blank = isinstance(out, str) and not out.strip()  # shown quoted on a command line, where it is invisible
    name = option(flag, repr(out) if blank and command_line() else out, keyword=keyword)
    if not isinstance(out, (str, os.PathLike)):
        raise InputError(f"{option(flag, keyword=keyword)}: {out!r} is not a folder path")
    text = os.fspath(out)
    if not str(text).strip():
        raise InputError(f"{name}: give a folder (an empty value would mean the current folder)")
    if "\0" in str(text):
        raise InputError(f"{option(flag, keyword=keyword)}: {str(text)!r} contains a NUL character")
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise InputError(f"{option(flag, str(path), keyword=keyword)}: is a file; give a folder")
    if entries and path.is_dir():
        refuse_special_entries(path, flag=flag, keyword=keyword)
    probe_in = path
    while not probe_in.exists() and probe_in != probe_in.parent:
        probe_in = probe_in.parent
    try:
        if not probe_in.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, "Not a directory")
        handle, probe = tempfile.mkstemp(dir=probe_in, prefix=".nlgbias-write-test-")
        os.close(handle)
        os.unlink(probe)
    except OSError as exc:
        raise InputError(f"{option(flag, str(path), keyword=keyword)}: cannot create or write this folder "
                         f"({exc.strerror or exc})") from None
    return path


def refuse_special_entries(folder: Path, *, flag: str = "--out", keyword: str | None = None) -> None:
    """Raise :class:`InputError` when ``folder`` holds a device, FIFO or socket (its own entries, not
    its subfolders'): an output written there by rename would replace it, and reading one hangs."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return  # an unreadable folder: the write test says what is wrong
    for entry in sorted(entries, key=lambda e: e.name):
        kind = special_kind(entry.path)
        if kind is not None and kind != "a folder":
            raise InputError(f"{option(flag, str(folder), keyword=keyword)}: {entry.path} is {kind}, not a regular "
                             f"file; nlgbias writes its files in this folder: remove it or give another folder")


def check_out_file(out, *, flag: str = "--out", keyword: str | None = None, what: str = "file name") -> Path:
    """An output file as ``Path``, checked without creating anything: given, no NUL, not a folder,
    and its folder writable or creatable (:func:`check_out_folder`)."""
    if not isinstance(out, (str, os.PathLike)) or not str(os.fspath(out)).strip():
        raise InputError(f"{option(flag, repr(out) if isinstance(out, str) and command_line() else out, keyword=keyword)}"
                         f": give a {what}")
    text = str(os.fspath(out))
    if "\0" in text:
        raise InputError(f"{option(flag, keyword=keyword)}: {text!r} contains a NUL character")
    path = Path(text)
    if path.is_dir():
        raise InputError(f"{option(flag, str(path), keyword=keyword)}: is a folder; give a {what}")
    kind = special_kind(path)
    if kind is not None:  # /dev/full, a FIFO: the atomic write would replace it with a regular file
        raise InputError(f"{option(flag, str(path), keyword=keyword)}: is {kind}, not a regular file; give a {what}")
    try:
        check_out_folder(path.parent, flag=flag, keyword=keyword, entries=False)
    except InputError:
        raise InputError(f"{option(flag, str(path), keyword=keyword)}: cannot write here (its folder "
                         f"{path.parent} cannot be created or written)") from None
    return path


def check_run_options(*, samples, batch_size, n_boot, confidence, min_n, device, concurrency, timeout,
                      max_retries, api_base=None, models=(), cooldown=60.0, flags: bool | None = None) -> None:
    """Every numeric and device option of a run, checked before anything loads."""
    flags = _flags(flags)
    if samples is not None:  # None: the suite's own, checked when the suite is read
        bounded(samples, 1, "samples", flags=flags, unit=" per prompt")
    check_batch_size(batch_size, flags=flags)
    bounded(n_boot, 100, "n_boot", flags=flags, why=" bootstrap replicates")
    _number(confidence, "confidence", flags, whole=False)
    if not 0 < confidence < 1:
        raise InputError(f"{_name('confidence', flags)}{' ' if flags else ''}{confidence}: must be between 0 and 1, "
                         f"e.g. 0.95")
    bounded(min_n, 1, "min_n", flags=flags)
    bounded(concurrency, 1, "concurrency", flags=flags, unit=" requests in flight per server")
    _number(timeout, "timeout", flags, whole=False)
    if timeout <= 0:
        raise InputError(f"{_name('timeout', flags)}{' ' if flags else ''}{timeout}: must be more than 0 seconds")
    at_most(timeout, LIMITS["timeout"], "timeout", flags=flags, why=" seconds (a day)")
    bounded(max_retries, 0, "max_retries", flags=flags)
    bounded(cooldown, 0, "cooldown", flags=flags, whole=False, why=" seconds")
    check_device(device, flags=flags)
    if api_base:
        server_urls(api_base, f"{_name('api_base', flags).rstrip('=')}")
    for spec in models:
        if isinstance(spec, str) and spec.startswith("openai:") and "@" in spec:
            check_url(spec.partition("@")[2], f"--model {spec}" if flags else f"models=[{spec!r}]")


__all__ = ["LIMITS", "at_least", "at_most", "bounded", "check_batch_size", "check_device", "check_out_file",
           "check_out_folder", "check_url", "refuse_special_entries", "check_run_options", "server_urls", "within"]
