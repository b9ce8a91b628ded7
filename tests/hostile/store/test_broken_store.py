"""A store path that is there but is no store (issue #30): every reader says what is wrong in
one line (exit 2) instead of an empty list or an internal error; `prov exec` still runs the
command, says loudly that nothing was recorded, and exits with the command's status."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.exec_support import prov
from tests.hostile.faults import one_error_line


def _symlink_loop(store: Path) -> str:
    os.symlink(store.name, store)  # the link points at itself
    return "symlink loop"


def _objects_is_a_file(store: Path) -> str:
    store.mkdir()
    (store / "objects").write_text("not a directory\n")
    return "objects is not a directory"


def _index_is_a_directory(store: Path) -> str:
    (store / "objects").mkdir(parents=True)
    (store / "index.sqlite").mkdir()
    return "index.sqlite is not a file"


def _dangling_symlink(store: Path) -> str:
    os.symlink(store.parent / "gone", store)
    return "does not exist"


def _under_a_file(store: Path) -> str:
    store.parent.joinpath("file").write_text("x")
    return "not a directory"


BROKEN = {"symlink-loop": _symlink_loop, "objects-is-a-file": _objects_is_a_file,
          "index-is-a-directory": _index_is_a_directory, "dangling-symlink": _dangling_symlink,
          "under-a-file": _under_a_file}
READERS = (("runs",), ("runs", "--json"), ("show", "0123"), ("store", "fsck"),
           ("store", "gc"), ("store", "reindex"), ("diff", "0123", "4567"))
SCRIPT = "import sys; print('the command ran'); sys.exit(3)"


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_a_broken_store_is_said_and_the_command_still_runs(penv, tmp_path, kind):
    store = tmp_path / "broken" / "store"
    store.parent.mkdir()
    needle = BROKEN[kind](store)
    if kind == "under-a-file":
        store = store.parent / "file" / "store"
    env = {**penv, "PROV_STORE": str(store)}
    for args in READERS:
        p = prov(*args, env=env, timeout=60)
        assert p.returncode == 2, (args, p.stdout, p.stderr)
        assert needle in one_error_line(p.stderr), args
        assert p.stdout == b"", args  # no empty list that reads as "no runs"
    p = prov("exec", "--json", "--", "python3", "-c", SCRIPT, env=env, timeout=60)
    assert p.returncode == 3, p.stderr
    notes = [ln for ln in p.stderr.decode().splitlines() if ln.startswith("prov:")]
    assert len(notes) == 2 and all("NOT RECORDED" in n and needle in n for n in notes), notes
    assert b"the command ran\n" in p.stderr  # --json: the command's stdout goes to stderr
    summary = json.loads(p.stdout)
    assert (summary["run_id"], summary["state"]) == (None, "unrecorded")
    assert needle in summary["error"]


def test_a_store_not_made_yet_is_no_error(penv, tmp_path):
    """The line between broken and absent: a store that does not exist yet lists no runs."""
    env = {**penv, "PROV_STORE": str(tmp_path / "not-yet")}
    p = prov("runs", "--json", env=env)
    assert (p.returncode, json.loads(p.stdout)) == (0, []), p.stderr
    assert not (tmp_path / "not-yet").exists()
