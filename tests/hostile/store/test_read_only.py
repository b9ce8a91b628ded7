"""A store on a read-only mount: every reader works, every writer is refused in one line;
`prov exec` runs the command unrecorded and says so (issue #30: the command never depends on
the store)."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.exec_support import prov, runs_json
from tests.hostile.faults import one_error_line, read_only_copy

WRITERS = (("store", "reindex"), ("store", "gc"), ("store", "gc", "--dry-run"))


@pytest.fixture
def recorded(penv):
    p = prov("exec", "--", "echo", "read me", env=penv)
    assert p.returncode == 0, p.stderr
    return Path(penv["PROV_STORE"]), runs_json(penv)


def _readers_work(env: dict[str, str], before: list[dict]) -> None:
    assert runs_json(env) == before
    run_id = before[0]["run_id"]
    p = prov("show", run_id, "--cat", "stdout", env=env)
    assert (p.returncode, p.stdout) == (0, b"read me\n"), p.stderr
    p = prov("show", run_id, env=env)
    assert p.returncode == 0 and run_id.encode() in p.stdout, p.stderr
    p = prov("store", "fsck", env=env)
    assert p.returncode == 0, p.stdout + p.stderr


@pytest.mark.timeout(180)
@pytest.mark.parametrize("wal", ["checkpointed", "writer-open"])
def test_read_only_store_reads_and_refuses_writes(recorded, penv, tmp_path, wal):
    store, before = recorded
    holder = None
    if wal == "writer-open":  # copied while a writer holds it: -wal and -shm come along
        holder = sqlite3.connect(store / "index.sqlite")
        holder.execute("PRAGMA journal_mode").fetchone()
        holder.execute("SELECT count(*) FROM runs").fetchone()
        assert (store / "index.sqlite-shm").exists()
    try:
        with read_only_copy(store, tmp_path / "ro") as ro:
            if holder is not None:
                holder.close()
            env = {**penv, "PROV_STORE": str(ro)}
            _readers_work(env, before)
            for args in WRITERS:
                p = prov(*args, env=env, timeout=60)
                assert p.returncode == 2, (args, p.stdout, p.stderr)
                assert "read-only" in one_error_line(p.stderr), args
            p = prov("exec", "--", "sh", "-c", "echo ran; exit 5", env=env, timeout=60)
            assert (p.returncode, p.stdout) == (5, b"ran\n"), p.stderr
            assert p.stderr.count(b"NOT RECORDED") == 2 and b"read-only" in p.stderr
            assert runs_json(env) == before
    finally:
        if holder is not None:
            holder.close()


def test_read_only_store_without_an_index_says_what_to_do(recorded, penv, tmp_path):
    store, _before = recorded
    copy = tmp_path / "copy"
    shutil.copytree(store, copy)
    for name in ("index.sqlite", "index.sqlite-wal", "index.sqlite-shm"):
        (copy / name).unlink(missing_ok=True)
    with read_only_copy(copy, tmp_path / "ro") as ro:
        p = prov("runs", env={**penv, "PROV_STORE": str(ro)}, timeout=60)
        assert p.returncode == 2, p.stdout + p.stderr
        assert "prov store reindex" in one_error_line(p.stderr)


def test_a_store_under_directories_not_made_yet_is_writable(penv, tmp_path):
    env = {**penv, "PROV_STORE": str(tmp_path / "a" / "b" / "store")}
    p = prov("exec", "--", "true", env=env)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "a" / "b" / "store" / "objects").is_dir()
