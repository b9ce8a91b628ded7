"""Fixtures shared by the report and publish tests: the demo model and a real divergence of
it (bf16 eager vs sdpa, through the supervisor and the gate, in its own store), made once per
session."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.runners.clihelp import prov

CACHE = Path(os.environ.get("PROV_TEST_CACHE", Path.home() / ".cache" / "prov-tests"))


@pytest.fixture(scope="session")
def demo_model_dir() -> Path:
    # built (or found in the cache) in a child: torch stays out of the pytest process
    code = ("import sys; from pathlib import Path; from runners.demo.build import ensure; "
            "print(ensure(Path(sys.argv[1]), steps=120))")
    p = subprocess.run([sys.executable, "-c", code, str(CACHE / "demo-model")],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    return Path(p.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def real_diverge(demo_model_dir, tmp_path_factory):
    """(result dir, store, workdir, the command's stdout) of a real bf16 eager-vs-sdpa run."""
    root = tmp_path_factory.mktemp("report-diverge")
    store = root / "store"
    p = prov("run", "diverge", "--ref", "transformers:attn=eager,dtype=bfloat16",
             "--cand", "transformers:attn=sdpa,dtype=bfloat16", "--model", str(demo_model_dir),
             "--text", str(demo_model_dir / "eval.txt"), "--vary", "attention-backend",
             "--out", str(root / "res" / "div"), "--max-tokens", "768",
             store=store, cwd=root, env={"COLUMNS": "160"})
    assert p.returncode == 0, p.stderr[-3000:]
    return root / "res" / "div", store, root, p.stdout
