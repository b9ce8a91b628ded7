"""Scratch venvs the tests build once and keep under the test cache (PROV_TEST_CACHE).

Each is built in place under a file lock and marked complete only at the end, so an
interrupted build is detected and redone instead of half-used.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

CACHE = Path(os.environ.get("PROV_TEST_CACHE", Path.home() / ".cache" / "prov-tests"))


def cached_venv(name: str, steps: Sequence[Sequence[str]], check: str, stamp: str,
                base: str = sys.executable) -> Path:
    """The interpreter of CACHE/NAME (a venv of `base`), built first if needed: each step is
    run as `python -m STEP...` in the new venv, then `python -c CHECK`; `stamp` is the
    marker's text."""
    venv = CACHE / name
    marker = venv / ".prov-complete"
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.exists():
            return venv / "bin" / "python"
        if venv.exists():
            shutil.rmtree(venv)
        subprocess.run([base, "-m", "venv", str(venv)], check=True)
        py = str(venv / "bin" / "python")
        for step in steps:
            subprocess.run([py, "-m", *step], check=True)
        subprocess.run([py, "-c", check], check=True)
        marker.write_text(stamp)
        return venv / "bin" / "python"
