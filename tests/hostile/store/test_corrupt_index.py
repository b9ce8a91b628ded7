"""A damaged index.sqlite: readers say so in one line naming reindex; reindex recovers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.exec_support import prov, runs_json
from tests.hostile.faults import one_error_line


def _truncate_half(p: Path) -> None:
    os.truncate(p, p.stat().st_size // 2)


def _garbage(p: Path) -> None:
    p.write_bytes(os.urandom(8192))


def _zero_header(p: Path) -> None:
    with open(p, "r+b") as fh:
        fh.write(b"\0" * 100)


def _flip_pages(p: Path) -> None:
    """The header intact, every later page overwritten: SQLite opens it, then fails."""
    data = bytearray(p.read_bytes())
    for i in range(4096, len(data), 7):
        data[i] ^= 0xFF
    p.write_bytes(bytes(data))


DAMAGE = {"truncated": _truncate_half, "garbage": _garbage, "zero-header": _zero_header,
          "flipped-pages": _flip_pages}
READERS = (("runs",), ("runs", "--json"), ("store", "fsck"))


@pytest.fixture
def damaged_store(penv):
    p = prov("exec", "--", "echo", "kept", env=penv)
    assert p.returncode == 0, p.stderr
    before = runs_json(penv)
    store = Path(penv["PROV_STORE"])
    # checkpoint the WAL into the main file, so damage to it is damage to the index
    import sqlite3

    conn = sqlite3.connect(store / "index.sqlite")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return store, before


@pytest.mark.timeout(120)
@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_readers_name_reindex_and_reindex_rebuilds(damaged_store, penv, damage):
    store, before = damaged_store
    index = store / "index.sqlite"
    for extra in ("index.sqlite-wal", "index.sqlite-shm"):
        (store / extra).unlink(missing_ok=True)
    DAMAGE[damage](index)
    for args in READERS:
        p = prov(*args, env=penv, timeout=60)
        assert p.returncode == 2, (args, p.stdout, p.stderr)
        assert "prov store reindex" in one_error_line(p.stderr)
    p = prov("store", "reindex", env=penv, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "moved aside" in p.stderr.decode()
    assert list(store.glob("index.sqlite.corrupt-*")), sorted(os.listdir(store))
    assert runs_json(penv) == before
    p = prov("store", "fsck", env=penv, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr


def test_reindex_of_a_healthy_index_moves_nothing(damaged_store, penv):
    store, before = damaged_store
    p = prov("store", "reindex", env=penv, timeout=60)
    assert p.returncode == 0 and b"moved aside" not in p.stderr, p.stderr
    assert not list(store.glob("index.sqlite.corrupt-*"))
    assert runs_json(penv) == before
