"""The SQLite index (WAL mode): a cache of what the objects say, rebuildable from them.

Nothing in the index is authoritative: `prov store reindex` drops every row and rebuilds
them from the objects alone. WAL lets many `prov exec` write at once; each write is one
short IMMEDIATE transaction, and a busy timeout makes concurrent writers queue, not fail.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS objects (
    digest TEXT PRIMARY KEY, kind TEXT NOT NULL, size INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS manifests (
    object TEXT PRIMARY KEY, manifest_digest TEXT NOT NULL, created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS manifests_by_digest ON manifests (manifest_digest);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    record TEXT NOT NULL,
    state TEXT NOT NULL,
    name TEXT,
    started_at TEXT NOT NULL,
    ended_at TEXT,
    exit_status INTEGER,
    manifest_digest TEXT,
    command TEXT NOT NULL,
    sup_host TEXT, sup_pid INTEGER, sup_boot TEXT, sup_start INTEGER
);
CREATE INDEX IF NOT EXISTS runs_by_start ON runs (started_at);
CREATE TABLE IF NOT EXISTS comparisons (
    object TEXT PRIMARY KEY, a TEXT NOT NULL, b TEXT NOT NULL, created_at TEXT NOT NULL
);
"""
RUN_COLUMNS = (
    "run_id",
    "record",
    "state",
    "name",
    "started_at",
    "ended_at",
    "exit_status",
    "manifest_digest",
    "command",
    "sup_host",
    "sup_pid",
    "sup_boot",
    "sup_start",
)


def _retry_locked(step, deadline_s: float = 60.0):
    """Run `step`, retrying while another connection holds the lock.

    Switching a new database to WAL needs an exclusive lock, and SQLite answers "database is
    locked" at once there instead of waiting out busy_timeout, so concurrent first openers
    (several `prov exec` into a fresh store) retry with a short backoff.
    """
    import random
    import time

    end = time.monotonic() + deadline_s
    while True:
        try:
            return step()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > end:
                raise
            time.sleep(random.uniform(0.005, 0.05))


def connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=60.0, isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA busy_timeout = 60000")
    mode = _retry_locked(lambda: conn.execute("PRAGMA journal_mode").fetchone()[0])
    if mode != "wal":
        _retry_locked(lambda: conn.execute("PRAGMA journal_mode = WAL"))
    # NORMAL in WAL mode survives a killed process; the index is rebuildable after power loss.
    conn.execute("PRAGMA synchronous = NORMAL")
    has_schema = _retry_locked(
        lambda: conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'runs'").fetchone()[0]
    )
    if has_schema == 0:
        _retry_locked(lambda: conn.executescript(SCHEMA))  # idempotent (IF NOT EXISTS)
    return conn


def connect_readonly(path: Path) -> sqlite3.Connection:
    """Open the index of a store prov cannot write (a read-only mount, another user's store).

    WAL readers need the -shm file; where it is absent and cannot be created, the database
    is opened `immutable` (SQLite then takes no locks and reads the main file alone, which
    holds everything once the last writer has checkpointed)."""
    for query in ("mode=ro", "immutable=1"):
        conn = sqlite3.connect(f"{path.absolute().as_uri()}?{query}", uri=True,
                               isolation_level=None, check_same_thread=False)
        conn.row_factory = sqlite3.Row
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return conn
        except sqlite3.OperationalError:
            conn.close()
    raise sqlite3.OperationalError(f"{path}: cannot be opened read-only")


def is_corruption(exc: sqlite3.Error) -> bool:
    """SQLite saying the file is not a (whole) database, as opposed to busy or full."""
    if isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.OperationalError):
        return True
    text = str(exc)
    return "malformed" in text or "not a database" in text


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def upsert_run(conn: sqlite3.Connection, row: dict) -> None:
    cols = ", ".join(RUN_COLUMNS)
    marks = ", ".join("?" for _ in RUN_COLUMNS)
    conn.execute(
        f"INSERT OR REPLACE INTO runs ({cols}) VALUES ({marks})",
        [row.get(c) for c in RUN_COLUMNS],
    )


def add_object(conn: sqlite3.Connection, digest: str, kind: str, size: int) -> None:
    conn.execute(
        "INSERT OR IGNORE INTO objects (digest, kind, size) VALUES (?, ?, ?)", (digest, kind, size)
    )
