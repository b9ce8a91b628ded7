"""The path an engine environment (a vLLM venv without prov) gets for its workers holds only
`runners` and the stdlib-only manifest model: the workers import from it, and nothing else
of prov is reachable there."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy


def test_workers_import_from_the_runners_only_path(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    base = subprocess.run([sys.executable, "-c", "from runners.launch import _runners_only_path"
                           " as p; print(p())"], env=env, capture_output=True, text=True,
                          check=True).stdout.strip()
    assert Path(base).is_relative_to(tmp_path)  # built under this cache
    assert sorted(p.name for p in Path(base).iterdir()) == ["provenance", "runners"]
    numpy_dir = str(Path(numpy.__file__).parents[1])
    code = ("import runners.worker, runners.workstream.worker, sys\n"
            "mods = sorted(m for m in sys.modules if m.startswith('provenance'))\n"
            "assert all(m == 'provenance' or m.startswith('provenance.model') for m in mods), mods\n"
            "try:\n    import provenance.store\nexcept ImportError:\n    print('isolated')\n")
    # -S: no site-packages (so no editable install of prov); numpy's directory by hand
    proc = subprocess.run([sys.executable, "-S", "-c", code], cwd=tmp_path,
                          env={"PATH": os.environ.get("PATH", ""),
                               "PYTHONPATH": os.pathsep.join([base, numpy_dir])},
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "isolated"
