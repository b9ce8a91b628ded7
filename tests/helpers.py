"""Shared test helpers: run the real `prov` console script of this venv."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).parent
PROV = str(BIN / "prov")


def run_prov(*args: str, env: dict[str, str] | None = None, cwd: str | Path | None = None,
             check: bool = False, timeout: float = 300) -> subprocess.CompletedProcess:
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    proc = subprocess.run([PROV, *args], capture_output=True, text=True, env=full_env, cwd=cwd,
                          timeout=timeout, stdin=subprocess.DEVNULL)
    if check and proc.returncode != 0:
        raise AssertionError(f"prov {' '.join(args)} exited {proc.returncode}: {proc.stderr}")
    return proc


def assert_one_line_error(proc: subprocess.CompletedProcess, code: int = 2) -> str:
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    err = proc.stderr.strip()
    assert "Traceback" not in err, err
    assert len(err.splitlines()) == 1, err
    return err
