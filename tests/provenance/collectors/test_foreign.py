"""The --python collector child under a hard timeout: a hung interpreter whose own child
keeps the pipes open cannot hold a snapshot past its timeout (with or without the progress
reader that --verify-files on a terminal uses)."""

from __future__ import annotations

import os
import signal
import time

import pytest

from provenance.collectors import foreign


@pytest.mark.parametrize("progress", [False, True])
def test_a_hung_child_with_a_grandchild_holding_its_pipes_times_out(tmp_path, progress):
    pid_file = tmp_path / "grandchild.pid"
    script = tmp_path / "python"
    script.write_text("#!/bin/sh\n"
                      'echo "prov-progress: 1 5" >&2\n'
                      f"sleep 120 & echo $! > {pid_file}\n"
                      "wait\n")
    script.chmod(0o755)
    seen: list[tuple[int, int]] = []
    start = time.monotonic()
    try:
        started = foreign.start(str(script), True, progress=progress)
        got = foreign.finish(started, str(script), 1.0, [],
                             on_progress=lambda done, total: seen.append((done, total)))
        elapsed = time.monotonic() - start
    finally:
        if pid_file.exists():
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
    assert got == f"unavailable: {script} timed out after 1 s"
    assert elapsed < 60  # the grandchild would hold the pipes for 120 s
    assert seen == ([(1, 5)] if progress else [])
