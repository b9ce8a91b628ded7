"""`run_probed`: a command under the in-process probe without a record gets the runtime a
record would hold (the runners' standalone launcher relies on it)."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from provenance.exec import run_probed

PROGRAM = """
import sys, torch
torch.set_num_threads(1)
print("said on stderr", file=sys.stderr)
sys.exit(int(sys.argv[1]))
"""


def _leftovers() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("prov-probed-*")}


def test_the_runtime_is_the_probes_reading_and_nothing_is_left_behind():
    before = _leftovers()
    done = run_probed([sys.executable, "-c", PROGRAM, "0"], {"PROV_TEST_MARK": "1"})
    assert done.returncode == 0 and "said on stderr" in done.stderr
    # what the program set, as the probe read it in its process (not a fresh default)
    assert done.runtime["torch"]["flags"]["num_threads"] == 1
    assert _leftovers() == before


def test_a_failing_command_keeps_its_status_and_stderr():
    done = run_probed([sys.executable, "-c", PROGRAM, "7"], {})
    assert done.returncode == 7 and "said on stderr" in done.stderr
