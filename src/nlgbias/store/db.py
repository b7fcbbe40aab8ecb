"""The run store: one SQLite database (WAL mode) per output folder.

Tables
------
``generations``
    One row per sample, keyed by ``generation_id`` = hash of (model, model fingerprint,
    prompt, sampling parameters, sample seed).  Rows are inserted a batch at a time, each batch
    in one transaction with ``INSERT OR IGNORE``: a killed run loses at most the batch in
    flight, and a rerun skips the keys it already has, so nothing is ever duplicated.
``scores``
    One row per (scored text, scorer, scorer version): a cache, so the same text is never
    scored twice.
``runs``
    Each run's configuration, first start and first finish time.
``models``
    What each loaded model reported about itself (architecture, dtype, weight hash).
``records``
    Other per-prompt measurements (pronoun probabilities, saliency), keyed like generations
    and stored a batch per transaction.

The store is the source of truth; Parquet, JSON and HTML outputs are rebuilt from it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Sequence

import pandas as pd

from nlgbias.errors import StoreError

SCHEMA_VERSION = 1
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    config TEXT NOT NULL,
    started_at TEXT NOT NULL,
    finished_at TEXT
);
CREATE TABLE IF NOT EXISTS generations (
    generation_id TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    prompt TEXT NOT NULL,
    params TEXT NOT NULL,
    seed INTEGER NOT NULL,
    continuation TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS models (
    model_id TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    info TEXT NOT NULL,
    PRIMARY KEY (model_id, fingerprint)
);
CREATE TABLE IF NOT EXISTS records (
    key TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS scores (
    text_hash TEXT NOT NULL,
    scorer TEXT NOT NULL,
    scorer_version TEXT NOT NULL,
    label TEXT NOT NULL,
    score REAL,
    details TEXT,
    PRIMARY KEY (text_hash, scorer, scorer_version)
);
"""


def now() -> str:
    """The current UTC time as ISO 8601 with seconds."""
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


class RunStore:
    """Open (or create) the store at ``path``.

    Parameters
    ----------
    path : str or pathlib.Path
        The SQLite file, usually ``<out>/store.sqlite``.  ``":memory:"`` for tests.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        if self.path != ":memory:" and not os.path.exists(self.path):
            _create(Path(self.path))
        try:
            self.db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=FULL")
            self.db.executescript(SCHEMA)
            row = self.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            if row is None:
                self.db.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        except sqlite3.DatabaseError as exc:
            if _out_of_space(exc, self.path):
                raise _full(self.path) from None
            raise StoreError(f"{self.path}: not a usable nlgbias store ({exc})") from None
        if row is not None and int(row[0]) != SCHEMA_VERSION:
            raise StoreError(f"{self.path}: store schema {row[0]}, this nlgbias reads {SCHEMA_VERSION}; use a new --out")

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> "RunStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- runs ---------------------------------------------------------------------------

    def start_run(self, run_id: str, config: dict) -> str:
        """Record a run (first start only); return its first start time."""
        with self._transaction():
            self.db.execute("INSERT OR IGNORE INTO runs (run_id, config, started_at) VALUES (?, ?, ?)",
                            (run_id, json.dumps(config, sort_keys=True), now()))
        return self.db.execute("SELECT started_at FROM runs WHERE run_id=?", (run_id,)).fetchone()[0]

    def runs(self) -> list[tuple[str, dict]]:
        """Every run recorded here: ``(run id, the configuration it was started with)``, oldest first."""
        rows = self.db.execute("SELECT run_id, config FROM runs ORDER BY started_at, rowid").fetchall()
        return [(run_id, json.loads(config)) for run_id, config in rows]

    def finish_run(self, run_id: str) -> str:
        """Set the finish time the first time a run completes; return it."""
        with self._transaction():
            self.db.execute("UPDATE runs SET finished_at=? WHERE run_id=? AND finished_at IS NULL", (now(), run_id))
        return self.db.execute("SELECT finished_at FROM runs WHERE run_id=?", (run_id,)).fetchone()[0]

    # -- models -------------------------------------------------------------------------

    def save_model_info(self, model_id: str, fingerprint: str, info: dict) -> None:
        """Remember what a loaded model reported (replaces an earlier record)."""
        with self._transaction():
            self.db.execute("INSERT OR REPLACE INTO models VALUES (?, ?, ?)",
                            (model_id, fingerprint, json.dumps(info, sort_keys=True)))

    def model_info(self, model_id: str, fingerprint: str) -> dict | None:
        row = self.db.execute("SELECT info FROM models WHERE model_id=? AND fingerprint=?",
                              (model_id, fingerprint)).fetchone()
        return json.loads(row[0]) if row else None

    # -- generations --------------------------------------------------------------------

    def _select_in(self, sql: str, keys: Iterable[str], params: Sequence = ()) -> list[tuple]:
        """Rows of ``sql`` (which ends in ``IN ({marks})``) for ``keys``, 500 keys per query."""
        keys = list(dict.fromkeys(keys))
        rows: list[tuple] = []
        for start in range(0, len(keys), 500):
            chunk = keys[start:start + 500]
            rows.extend(self.db.execute(sql.format(marks=",".join("?" * len(chunk))), [*params, *chunk]))
        return rows

    def existing_generations(self, ids: Iterable[str]) -> set[str]:
        """The subset of ``ids`` already stored."""
        return {r[0] for r in self._select_in(
            "SELECT generation_id FROM generations WHERE generation_id IN ({marks})", ids)}

    def add_generations(self, rows: Sequence[dict]) -> int:
        """Insert one batch in one transaction; existing keys are left as they are.

        Each row needs ``generation_id, model, prompt, params (dict), seed, continuation``.
        Returns the number of rows actually inserted.
        """
        stamp = now()
        values = [(r["generation_id"], r["model"], r["prompt"], json.dumps(r["params"], sort_keys=True),
                   int(r["seed"]), r["continuation"], stamp) for r in rows]
        with self._transaction():
            before = self.db.total_changes
            self.db.executemany("INSERT OR IGNORE INTO generations VALUES (?, ?, ?, ?, ?, ?, ?)", values)
            return self.db.total_changes - before

    def generations(self, ids: Sequence[str]) -> pd.DataFrame:
        """Stored rows for ``ids``: ``generation_id, continuation`` (missing ids are absent)."""
        rows = self._select_in("SELECT generation_id, continuation FROM generations WHERE generation_id IN ({marks})", ids)
        return pd.DataFrame(rows, columns=["generation_id", "continuation"]).astype(str)

    def count_generations(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM generations").fetchone()[0]

    # -- scores -------------------------------------------------------------------------

    def existing_scores(self, text_hashes: Iterable[str], scorer: str, version: str) -> set[str]:
        return {r[0] for r in self._select_in(
            "SELECT text_hash FROM scores WHERE scorer=? AND scorer_version=? AND text_hash IN ({marks})",
            text_hashes, (scorer, version))}

    def add_scores(self, rows: Sequence[dict]) -> None:
        """Insert scores (``text_hash, scorer, scorer_version, label, score, details``) in one transaction."""
        values = [(r["text_hash"], r["scorer"], r["scorer_version"], r["label"],
                   None if r.get("score") is None else float(r["score"]),
                   None if r.get("details") is None else json.dumps(r["details"], sort_keys=True)) for r in rows]
        with self._transaction():
            self.db.executemany("INSERT OR IGNORE INTO scores VALUES (?, ?, ?, ?, ?, ?)", values)

    def scores(self, text_hashes: Sequence[str], scorer: str, version: str) -> pd.DataFrame:
        """Stored scores: ``text_hash, label, score, details`` (details as JSON text or None)."""
        rows = self._select_in("SELECT text_hash, label, score, details FROM scores "
                               "WHERE scorer=? AND scorer_version=? AND text_hash IN ({marks})",
                               text_hashes, (scorer, version))
        return pd.DataFrame(rows, columns=["text_hash", "label", "score", "details"])

    # -- records ------------------------------------------------------------------------

    def add_records(self, kind: str, values: dict[str, dict]) -> None:
        """Store ``key -> value`` (JSON) measurements of one kind in one transaction."""
        rows = [(k, kind, json.dumps(v, sort_keys=True, default=_json_default)) for k, v in values.items()]
        with self._transaction():
            self.db.executemany("INSERT OR IGNORE INTO records VALUES (?, ?, ?)", rows)

    def records(self, keys: Sequence[str]) -> dict[str, dict]:
        """Stored values for ``keys`` (missing keys are absent)."""
        return {k: json.loads(v) for k, v in self._select_in("SELECT key, value FROM records WHERE key IN ({marks})", keys)}

    # -- helpers ------------------------------------------------------------------------

    def _transaction(self):
        return _Transaction(self.db, self.path)


def _json_default(value):
    """numpy scalars and NaN-able floats in stored records."""
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"cannot store {type(value).__name__} in a record")


class _Transaction:
    """BEGIN IMMEDIATE ... COMMIT, rolled back on any exception.

    A full disk (SQLite's ``SQLITE_FULL``, or an I/O error) becomes one :class:`StoreError` line:
    the transaction is rolled back, and everything committed before it stays in the store.
    """

    def __init__(self, db: sqlite3.Connection, path: str = ":memory:") -> None:
        self.db = db
        self.path = path

    def __enter__(self) -> None:
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if _out_of_space(exc, self.path):
                raise _full(self.path) from None
            raise

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            try:
                self.db.execute("COMMIT")
                return
            except sqlite3.OperationalError as commit_error:
                exc = commit_error
        if self.db.in_transaction:
            self.db.execute("ROLLBACK")
        if isinstance(exc, sqlite3.OperationalError) and _out_of_space(exc, self.path):
            raise _full(self.path) from None
        if exc_type is None:
            raise exc


SQLITE_FULL, SQLITE_IOERR = 13, 10


def _out_of_space(exc: sqlite3.Error, path: str | None = None) -> bool:
    """Whether SQLite failed for want of disk space: its own code says so, or (opening a store in
    WAL mode on a full disk reads as "malformed") the folder of ``path`` has under 1 MiB free."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None and code & 0xFF in (SQLITE_FULL, SQLITE_IOERR):
        return True
    if "disk is full" in str(exc) or "disk I/O error" in str(exc):
        return True
    if path is None or path == ":memory:":
        return False
    try:
        return shutil.disk_usage(Path(path).parent).free < 1 << 20
    except OSError:
        return False


def _full(path: str) -> StoreError:
    folder = Path(path).parent
    return StoreError(f"{folder}: disk full (no space left on device) while writing the run store {Path(path).name}; "
                      f"everything stored before is kept: free space, then rerun the same command to resume")


def _create(path: Path) -> None:
    """Create an empty store at ``path`` whole: built under another name, then moved into place.

    So ``path`` never exists at 0 bytes because it is being created (a 0-byte store was lost, not
    new).  Leftovers of a process killed while creating one are removed.
    """
    for stale in path.parent.glob(f".{path.name}.new-*"):
        pid = stale.name[len(f".{path.name}.new-"):].partition("-")[0]
        if pid.isdigit() and not _alive(int(pid)):
            stale.unlink(missing_ok=True)
    staging = path.with_name(f".{path.name}.new-{os.getpid()}")
    staging.unlink(missing_ok=True)
    try:
        db = sqlite3.connect(staging, isolation_level=None)  # a rollback journal: nothing stays in a WAL file
        try:
            db.executescript(f"BEGIN; {SCHEMA} INSERT INTO meta VALUES ('schema_version', '{SCHEMA_VERSION}'); COMMIT;")
        finally:
            db.close()
        db = sqlite3.connect(staging, isolation_level=None)
        try:  # every byte of it on disk and readable, or no store at all
            if db.execute("PRAGMA integrity_check").fetchone()[0] != "ok":
                raise sqlite3.OperationalError("disk I/O error")
        finally:
            db.close()
        try:
            os.link(staging, path)  # fails if another process put a store there meanwhile: that one is kept
        except FileExistsError:
            pass
        except OSError:  # a file system without hard links
            if not path.exists():
                os.rename(staging, path)
    except sqlite3.DatabaseError as exc:
        if _out_of_space(exc, str(path)):
            raise _full(str(path)) from None
        raise StoreError(f"{path}: cannot create the run store ({exc})") from None
    except OSError as exc:
        raise StoreError(f"{path}: cannot create the run store ({exc.strerror or exc})") from None
    finally:
        for leftover in (staging, staging.with_name(staging.name + "-journal")):
            with contextlib.suppress(OSError):
                leftover.unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, but not ours to signal
        return True
    return True
