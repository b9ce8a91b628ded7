"""`prov snapshot` through the console script: its errors keep the CLI's rules, and a warm
snapshot (every cache used) records what a cold one records."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.helpers import PROV, run_prov


def test_errors_keep_the_cli_rules(tmp_path):
    proc = run_prov("snapshot", "--format", "yaml", "-o", str(tmp_path / "m.toml"),
                    env={"PROV_STORE": str(tmp_path / "s")})
    assert proc.returncode == 2
    assert proc.stderr.strip() == "prov: error: --format must be toml or json, not 'yaml'"


def test_a_warm_snapshot_records_what_a_cold_one_records(tmp_path):
    """Through the console script: a cold `--python` snapshot (prov's caches empty) and a
    warm one (the kept answer, dpkg parse and torch probe reused) give the same
    identity digest, and each stored text re-verifies its recorded digest."""
    import shutil
    import time

    from provenance.collectors.stamped import RACY_NS
    from provenance.model import Manifest

    base = shutil.which("python3") or sys.executable
    venv = tmp_path / "venv"
    subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    time.sleep(RACY_NS / 1e9 + 0.1)  # past the racy window, so the cold run's answer is kept
    env = {**os.environ, "PROV_STORE": str(tmp_path / "store"),
           "PROV_CACHE_DIR": str(tmp_path / "cache")}
    args = [PROV, "snapshot", "--python", str(venv / "bin" / "python"), "--json"]
    runs = [subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)
            for _ in range(2)]
    assert [r.returncode for r in runs] == [0, 0], runs[0].stderr + runs[1].stderr
    cold, warm = (Manifest.loads(r.stdout) for r in runs)  # loads re-checks each digest
    assert warm.digest() == cold.digest()
    answers = [m.facts["collectors"]["python"]["answer"] for m in (cold, warm)]
    assert answers == ["collected", "cached"]
    assert warm.facts["host"]["timestamp"] != cold.facts["host"]["timestamp"]
