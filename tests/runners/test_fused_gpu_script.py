"""bench/gpu/run_h200.sh, the one GPU call of issue 7, in its CPU dry-run mode.

Every step runs for real with tiny shapes (Triton interpreter, 2-layer model, 256 tokens):
prov snapshot, prov exec of the workload, the bench, prov run repeat per backend (each worker
a recorded run), the pairs through the gate, and the 8 result files. On the GPU the same
script runs with the real sizes; this test guards the script, not the GPU figures.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory) -> Path:
    # triton is a test dependency; looked up, not imported (it would pull torch in here)
    assert importlib.util.find_spec("triton"), "triton missing: pip install -e '.[test]'"
    base = tmp_path_factory.mktemp("gpu-dry")
    out = base / "out"
    env = {**os.environ, "DRY_RUN_CPU": "1", "PY": sys.executable, "OUT": str(out),
           "WORK": str(base / "work"), "WHL_DIR": str(base / "no-wheels"),
           "BACKENDS": "flash,math,eager", "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(["bash", "bench/gpu/run_h200.sh"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out


def test_eight_result_files(dry_run):
    names = sorted(p.name for p in dry_run.iterdir())
    assert names == ["bench.json", "bench.txt", "divergence.json", "divergence.txt",
                     "log.txt", "manifest.json", "manifest.txt", "summary.json"]


def test_bench_checks_hold(dry_run):
    bench = json.loads((dry_run / "bench.json").read_text())
    assert bench["check"]["top1_equal"] and bench["check"]["digest_equals_host"]
    assert bench["check"]["max_abs_diff_kl_ref_cand"] < 1e-4


def test_manifest_step_recorded_the_workload(dry_run):
    man = json.loads((dry_run / "manifest.json").read_text())
    assert man["run_id"] and "gpu_manifest" in man and "collect_env" in man


def test_repeats_and_gated_pairs(dry_run):
    div = json.loads((dry_run / "divergence.json").read_text())
    verdicts = {k: v["summary"]["verdict"] for k, v in div["repeats"].items()}
    assert verdicts == {f"repeat-{b}": "bit-identical" for b in ("eager", "flash", "math")}
    pairs = div["pairs"]
    assert pairs["gate_without_vary"].startswith("refused")
    assert set(pairs["pairs"]) == {"flash~math", "flash~eager", "math~eager"}
    for p in pairs["pairs"].values():
        assert p["gate"] == "passed" and p["arrays_sha256"] and p["positions"] == 255
