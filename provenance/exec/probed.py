"""A command run under the in-process probe without a record: what the engine resolved,
read as `prov exec` reads it, for callers that keep no run (the runners' standalone
launcher). One reader for every program: a worker's own word is never its runtime."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from provenance.exec.probe import host as probe


@dataclass
class Probed:
    returncode: int
    stderr: str
    runtime: dict[str, Any]  # the run's `runtime` section, as a record would hold it


def run_probed(argv: Sequence[str], env: Mapping[str, str]) -> Probed:
    """Run `argv` with `env` added to ours and the probe installed; its output captured."""
    with tempfile.TemporaryDirectory(prefix="prov-probed-") as run_dir:
        full = {**os.environ, **env, "PROV_RUN_DIR": run_dir}
        full.update(probe.environment(run_dir, full))
        proc = subprocess.run(list(argv), env=full, capture_output=True, text=True)
        runtime = probe.collect(run_dir, argv).get("runtime") or {}
    return Probed(proc.returncode, proc.stderr, runtime if isinstance(runtime, dict) else {})
