"""The store's filesystem fills while a run streams: the command keeps its output and status.

The store sits on a 2 MiB tmpfs the test mounts (root); the command prints 8 MB.
"""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from tests.exec_support import PYTHON, prov, show_json
from tests.hostile.faults import one_error_line, tmpfs

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


@pytest.mark.timeout(120)
def test_full_before_start_refuses_without_running(penv, tmp_path):
    with tmpfs(tmp_path / "small", "1m") as small:
        env = {**penv, "PROV_STORE": str(small / "store")}
        (small / "store").mkdir()
        with open(small / "filler", "wb") as fh:  # fill the filesystem
            try:
                while True:
                    fh.write(b"\0" * 65536)
                    fh.flush()
            except OSError:
                pass
        marker = tmp_path / "ran"
        p = prov("exec", "--", PYTHON, "-c", f"open({str(marker)!r}, 'w')", env=env)
        assert p.returncode == 4, p.stderr
        assert "disk full" in one_error_line(p.stderr)
        assert not marker.exists()
        tmp = small / "store" / "tmp"
        assert not (tmp.is_dir() and os.listdir(tmp)), "a temp file was left behind"
