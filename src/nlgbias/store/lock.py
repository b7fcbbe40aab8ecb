"""One run at a time in an output folder: an OS lock on ``<out>/.lock``.

:func:`hold_folder` takes an exclusive, non-blocking ``flock`` on ``<out>/.lock`` before anything
else in the folder is read or written, and writes the holder's pid and command line into it.
A second run into the same folder stops at once with one line that names the holder::

    runs/demo is in use by run pid 4242 (nlgbias run sheng2019 --out runs/demo); wait for it or use another --out

The operating system releases the lock when the holder exits, however it exits (``kill -9``
included), so a lock file left behind by a dead process is simply taken over by the next run.
A holder that exits normally removes the file.

Commands that only read a run folder (``report RUN ... --out``, ``annotate sample``, ``plan
--from``) call :func:`refuse_if_held`, which probes the lock without creating or changing
anything, and refuse a folder a run holds with the same line.

Where the platform has no ``flock`` (Windows) or the file system refuses it (some network
file systems), the run goes on without the lock.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Iterator, Sequence

from nlgbias.errors import StoreError, option
from nlgbias.urls import redact

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

LOCK_NAME = ".lock"


def command_text(command: Sequence[str] | None) -> str:
    """The command line as one line of shell words (credentials in URLs hidden)."""

    words = list(command) if command else ["python", *sys.argv]
    return redact(" ".join(shlex.quote(str(w)) for w in words)).replace("\n", " ")


def holder(path: Path, *, wait: float = 0.5) -> tuple[str, str]:
    """``(pid, command)`` written in the lock file ``path`` (``"?"`` where it cannot be read).

    The holder writes them just after taking the lock, so an empty file is read again for up to
    ``wait`` seconds.
    """
    deadline = time.monotonic() + wait
    while True:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = ""
        pid, _, command = text.partition("\n")
        if pid.strip() or time.monotonic() >= deadline:
            return pid.strip() or "?", command.strip() or "?"
        time.sleep(0.02)


@contextlib.contextmanager
def hold_folder(folder: str | Path, *, command: Sequence[str] | None = None, advice: str | None = None) -> Iterator[Path]:
    """Hold ``folder`` (which must exist) for one run (or one re-render of its report); raise
    :class:`StoreError` if another holds it, ending with ``advice`` (default: wait or use another --out).

    Yields the lock file's path.  On exit the lock file is removed, then released.
    """
    path = Path(folder) / LOCK_NAME
    if fcntl is None:
        yield path
        return
    handle = _acquire(path, folder, advice)
    if handle is None:  # the file system takes no locks: go on without one
        yield path
        return
    try:
        with contextlib.suppress(OSError):  # who holds it is for messages only (a full disk may refuse it)
            os.ftruncate(handle, 0)
            os.write(handle, f"{os.getpid()}\n{command_text(command)}\n".encode("utf-8"))
        yield path
    finally:
        with contextlib.suppress(OSError):
            path.unlink()  # while still locked: a waiting process then finds the file gone and retries
        os.close(handle)


def refuse_if_held(folder: str | Path, *, advice: str = "wait for it to finish, then rerun this command") -> None:
    """Raise :class:`StoreError` (naming the holder's pid and command) when a run holds ``folder``.

    For commands that only read a run folder: the lock file is opened read-only and probed with a
    shared lock, released at once, so nothing in the folder is created or changed.  A folder
    without a lock file, or whose file system takes no locks, is free.
    """
    if fcntl is None:
        return
    path = Path(folder) / LOCK_NAME
    try:
        handle = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                pid, command = holder(path)
                raise StoreError(f"{folder} is in use by run pid {pid} ({command}); {advice}") from None
            return
        fcntl.flock(handle, fcntl.LOCK_UN)
    finally:
        os.close(handle)


def _acquire(path: Path, folder: str | Path, advice: str | None = None) -> int | None:
    """An open, locked file descriptor of ``path``; None where locks are not supported."""
    assert fcntl is not None
    for _ in range(100):
        try:
            handle = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StoreError(f"{option('--out', str(folder))}: cannot create or write this folder "
                             f"({exc.strerror or exc})") from None
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(handle)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                pid, command = holder(path)
                raise StoreError(f"{folder} is in use by run pid {pid} ({command}); "
                                 f"{advice or 'wait for it or use another ' + option('--out')}") from None
            return None  # ENOLCK, EINVAL: no locks on this file system
        try:  # the previous holder may have removed the file between our open and our lock
            if os.fstat(handle).st_ino == os.stat(path).st_ino:
                return handle
        except FileNotFoundError:
            pass
        os.close(handle)
    raise StoreError(f"{path}: could not take the run lock (the file keeps changing); retry")


__all__ = ["LOCK_NAME", "hold_folder", "holder", "command_text", "refuse_if_held"]
