"""The `torch` section: torch's build facts and default numerics flags, read in a subprocess.

Importing torch costs seconds and may touch the GPU, so it runs in a child of the target
interpreter under a hard timeout, and the answer is cached, keyed by everything it depends
on: the torch distribution's fingerprint, the interpreter, the NVIDIA driver and the
environment variables torch reads at start-up.

The subprocess imports torch and calls the one reader of torch's state,
`standalone/torch_state.py` (`snapshot`): build facts as `torch.*`, and under
`torch.flags.*` the flags a fresh process gets. A workload can change them at run time;
`prov exec`'s in-process probe reads the same list of flags inside the program, with the
same reader (`runtime.torch.flags.*`, what the process had).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from provenance.collectors.standalone import torch_state
from provenance.model.digests import file_sha256

# The child: torch first, as a fresh process imports it, then the one reader of its state
# (standalone/torch_state.py, which the in-process probe runs too), from the directory
# given as argv[1], put first so no other module of that name wins.
PROBE = (
    "import json, sys\n"
    "import torch\n"
    "sys.path.insert(0, sys.argv[1])\n"
    "import torch_state\n"
    "sys.stdout.write(json.dumps(torch_state.snapshot(torch)))\n"
)
READER = Path(torch_state.__file__)

_KEY_ENV_PREFIXES = (
    "TORCH_",
    "PYTORCH_",
    "CUDA_",
    "NVIDIA_",
    "CUBLAS_",
    "CUDNN_",
    "OMP_",
    "MKL_",
    "ATEN_",
)


def cache_dir() -> Path:
    from provenance.collectors.stamped import cache_root

    return Path(cache_root()) / "torch"


def cache_key(python: str, torch_fingerprint: str) -> str:
    env = sorted((k, v) for k, v in os.environ.items() if k.startswith(_KEY_ENV_PREFIXES))
    try:
        driver = Path("/proc/driver/nvidia/version").read_text()
    except OSError:
        driver = ""
    # the reader's own bytes: a changed reader never answers from an older one's cache
    reader = file_sha256(READER)
    material = json.dumps([python, torch_fingerprint, env, driver, os.cpu_count(), reader])
    return hashlib.sha256(material.encode()).hexdigest()


def collect(
    warnings: list[str],
    python: str | None = None,
    torch_fingerprint: str = "",
    timeout: float = 90.0,
) -> dict[str, Any]:
    python = python or sys.executable
    path = cache_dir() / f"{cache_key(python, torch_fingerprint)}.json"
    if torch_fingerprint and path.exists():
        try:
            section = json.loads(path.read_text())
            section["cache"] = "hit"
            return section
        except (OSError, ValueError):
            pass  # a damaged cache entry is recomputed
    import subprocess  # a cache hit (the usual case) needs neither this nor the writer

    try:
        proc = subprocess.run(
            [python, "-c", PROBE, str(READER.parent)],
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return {"probe": f"unavailable: import torch timed out after {timeout:g} s"}
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"probe": f"unavailable: import torch failed: {last[:200]}"}
    section = json.loads(proc.stdout)
    if torch_fingerprint:
        from provenance.model.atomic import write_atomic

        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, json.dumps(section))
        except OSError as exc:
            warnings.append(f"torch: cannot write probe cache: {exc.strerror}")
    section["cache"] = "miss"
    return section
