"""The store's filesystem fills while a run streams: the command keeps its output and status.

The store sits on a 2 MiB tmpfs the test mounts (root); the command prints 8 MB.
"""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from tests.exec_support import PYTHON, prov, show_json
from tests.hostile.faults import fill, one_error_line, tmpfs

LINES = 8000
SCRIPT = (
    "import sys\n"
    f"for i in range({LINES}): sys.stdout.write(f'{{i:08d}}' + 'x' * 1015 + '\\n')\n"
    "sys.stderr.write('stderr survives\\n')\n"
    "sys.exit(7)\n"
)


@pytest.mark.timeout(180)
def test_disk_full_mid_stream_keeps_output_and_status(penv, tmp_path):
    with tmpfs(tmp_path / "small", "2m") as small:
        env = {**penv, "PROV_STORE": str(small / "store")}
        p = prov("exec", "--", PYTHON, "-c", SCRIPT, env=env, timeout=120)
        expected = b"".join(f"{i:08d}".encode() + b"x" * 1015 + b"\n" for i in range(LINES))
        assert p.returncode == 7, p.stderr
        assert hashlib.sha256(p.stdout).digest() == hashlib.sha256(expected).digest()
        assert b"stderr survives\n" in p.stderr and b"Traceback" not in p.stderr
        runs = prov("runs", "--json", env=env)
        assert runs.returncode == 0, runs.stderr
        rec = show_json(json.loads(runs.stdout)[0]["run_id"], env)
        assert rec["exit_status"] == 7 and rec["state"] == "failed"  # a non-zero exit is a failed run (#18)
        assert any("stdout log truncated: disk full" in w for w in rec["warnings"])
        log = rec["logs"]["stdout"]
        assert log["truncated"] == "disk full" and 0 < log["size"] < len(expected)
        stored = prov("show", rec["run_id"], "--cat", "stdout", env=env)
        assert stored.returncode == 0 and expected.startswith(stored.stdout)
        assert len(stored.stdout) == log["size"]


FULL_SCRIPT = ("import sys\n"
               "open(sys.argv[1], 'w').close()\n"
               "print('the command ran')\n"
               "sys.exit(7)\n")


@pytest.mark.timeout(120)
def test_full_before_start_runs_the_command_unrecorded(penv, tmp_path):
    """8 KiB left and no index yet (issue #30): the command still runs, its output and
    status pass through, prov says twice that nothing was recorded and why; the store's
    readers then say the store is full in one line (exit 4) instead of a traceback."""
    with tmpfs(tmp_path / "small", "1m") as small:
        env = {**penv, "PROV_STORE": str(small / "store")}
        (small / "store").mkdir()
        fill(small, leave=8192)
        marker = tmp_path / "ran"
        p = prov("exec", "--", PYTHON, "-c", FULL_SCRIPT, str(marker), env=env)
        assert p.returncode == 7, p.stderr
        assert marker.exists() and p.stdout == b"the command ran\n"
        notes = [ln for ln in p.stderr.decode().splitlines() if ln.startswith("prov:")]
        assert len(notes) == 2 and all("NOT RECORDED" in n and "disk full" in n
                                       for n in notes), p.stderr
        assert b"Traceback" not in p.stderr
        tmp = small / "store" / "tmp"
        assert not (tmp.is_dir() and os.listdir(tmp)), "a temp file was left behind"
        j = prov("exec", "--json", "--", PYTHON, "-c", FULL_SCRIPT, str(marker), env=env)
        summary = json.loads(j.stdout)
        assert j.returncode == 7 and summary["run_id"] is None, j.stderr
        assert summary["state"] == "unrecorded" and "disk full" in summary["error"]
        for reader in (("runs",), ("runs", "--json"), ("store", "fsck")):
            r = prov(*reader, env=env)
            assert r.returncode == 4, (reader, r.stdout, r.stderr)
            assert "disk full" in one_error_line(r.stderr)


FILL_AND_FAIL = ("import sys\n"
                 "with open(sys.argv[1], 'wb', buffering=0) as fh:\n"
                 "    try:\n"
                 "        while fh.write(b'\\0' * 65536):\n"
                 "            pass\n"
                 "    except OSError:\n"
                 "        pass\n"
                 "sys.exit(5)\n")


@pytest.mark.timeout(120)
def test_a_failed_command_stays_failed_when_the_store_fills_during_it(penv, tmp_path):
    """The command fills the store's filesystem, then exits 5: the run's facts cannot be
    stored after it, and the summary still says `failed`, as a record stored in full would
    (it said `complete` before issue #31)."""
    with tmpfs(tmp_path / "small", "2m") as small:
        env = {**penv, "PROV_STORE": str(small / "store")}
        j = prov("exec", "--json", "--", PYTHON, "-c", FILL_AND_FAIL, str(small / "filler"),
                 env=env, timeout=100)
        assert j.returncode == 5, j.stderr
        summary = json.loads(j.stdout)
        assert summary["exit_status"] == 5 and summary["state"] == "failed", summary
        assert any("could not be stored" in w for w in summary["warnings"]), summary
