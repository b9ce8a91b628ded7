"""Run a Python program with the probe, without prov: the in-process half on its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from provenance.exec.probe.host import environment

PYTHON = sys.executable


def probe_env(run_dir: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PROV_INPROCESS", None)
    env.update(extra)
    env["PROV_RUN_DIR"] = str(run_dir)
    env.update(environment(run_dir, env))
    return env


def run_probed(run_dir: Path, *args: str, timeout: float = 120, **extra: str):
    return subprocess.run([PYTHON, *args], env=probe_env(run_dir, **extra), capture_output=True,
                          timeout=timeout, cwd=run_dir)


def run_plain(cwd: Path, *args: str, timeout: float = 120, **extra: str):
    env = dict(os.environ)
    env.pop("PROV_RUN_DIR", None)
    env.update(extra)
    return subprocess.run([PYTHON, *args], env=env, capture_output=True, timeout=timeout,
                          cwd=cwd)


def probe_files(run_dir: Path) -> list[dict]:
    """Every process's file, each parsed (a half-written file would fail here)."""
    return [json.loads(p.read_text()) for p in sorted((run_dir / "probe").glob("*.json"))]
