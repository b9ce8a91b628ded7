"""What every worker process leaves behind: scores.npz and its metadata file. What the
engine resolved is not the worker's to say: the in-process probe of `prov exec` reads it
for every program alike, prov's workers included (provenance/exec/probe).

Imports nothing of `provenance` but its stdlib-only model (the one atomic writer): workers run
inside other interpreters (a vLLM venv) that see only `runners` and `provenance.model`
(runners/launch.py, `_runners_only_path`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from provenance.model.atomic import write_atomic
from runners.arrays import npz_bytes


def write_worker_output(out: Path, arrays: dict[str, np.ndarray], meta_name: str,
                        meta: dict[str, Any]) -> None:
    """Write OUT/scores.npz and OUT/META_NAME (sorted JSON), each atomically."""
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "scores.npz", npz_bytes(arrays))
    write_atomic(out / meta_name, json.dumps(meta, indent=1, sort_keys=True).encode())
