"""A package prov needs but that is missing says so in one line (exit 4), not as an internal
error (seen on the H200: `prov run replay` without jsonschema exited 70)."""

from __future__ import annotations

import subprocess
import sys

BLOCKED = """
import sys
sys.modules["jsonschema"] = None  # the import then fails as a missing package does
sys.argv = ["prov"] + sys.argv[1:]
from provenance.cli import main
main()
"""


def test_a_missing_package_is_named_with_exit_4(tmp_path):
    from runners.workstream import EXAMPLES

    # the bundled workstream's tool schemas are checked on reading it: jsonschema's first use
    p = subprocess.run([sys.executable, "-c", BLOCKED, "run", "replay",
                        EXAMPLES + "/file_agent.json", "--model", str(tmp_path)],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert p.returncode == 4, p.stderr
    assert p.stderr.count("\n") == 1 and "'jsonschema' is not installed" in p.stderr
    assert "internal error" not in p.stderr and "Traceback" not in p.stderr
