"""What every worker process leaves behind: scores.npz, its metadata file, and (under
`prov exec`) the resolved runtime added to the run's manifest.

Imports nothing of `provenance` but its stdlib-only model (the one atomic writer): workers run
inside other interpreters (a vLLM venv) that see only `runners` and `provenance.model`
(runners/launch.py, `_runners_only_path`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from provenance.model.atomic import write_atomic
from runners.arrays import npz_bytes


def write_worker_output(out: Path, arrays: dict[str, np.ndarray], meta_name: str,
                        meta: dict[str, Any]) -> None:
    """Write OUT/scores.npz and OUT/META_NAME (sorted JSON), each atomically; when run under
    `prov exec` (PROV_RUN_DIR set), add meta["runtime"] to the run's facts, where the gate
    and its presets (attention-backend, kv-cache-dtype, dtype) see it."""
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "scores.npz", npz_bytes(arrays))
    write_atomic(out / meta_name, json.dumps(meta, indent=1, sort_keys=True).encode())
    if os.environ.get("PROV_RUN_DIR"):
        from runners.runfacts import add_run_facts

        add_run_facts({"runtime": meta["runtime"]})
