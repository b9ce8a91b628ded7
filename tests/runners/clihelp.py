"""Run the real `prov` CLI in a subprocess with its own store."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PROV = [str(Path(sys.executable).with_name("prov"))]


def prov(*args: str, store: Path, cwd: Path, env: dict[str, str] | None = None,
         timeout: int = 600) -> subprocess.CompletedProcess:
    full = {**os.environ, "PROV_STORE": str(store), **(env or {})}
    return subprocess.run([*PROV, *args], cwd=cwd, env=full, capture_output=True, text=True,
                          timeout=timeout)
