"""For workloads: add facts to the manifest of the run they are part of.

A workload started by `prov exec` (or `run_supervised`) may describe what it resolved at
run time, e.g. the attention backend vLLM really picked:

    from runners.runfacts import add_run_facts
    add_run_facts({"runtime": {"vllm": {"attention_backend": {"resolved": "FLASH_ATTN"}}}})

The facts land in `$PROV_RUN_DIR/facts.json`; when the run ends the supervisor merges
each top-level section into the run's manifest (identity unless the classification table
says otherwise), so `prov compare` and its presets see them. Sections the snapshot
already has (python, os, gpu...) cannot be overwritten. The standard library and the
stdlib-only model only (this runs in workers, in engine environments without prov).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from provenance.model.atomic import write_atomic

FACTS_FILE = "facts.json"


def _merge(into: dict[str, Any], new: dict[str, Any]) -> None:
    for key, value in new.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value


def add_run_facts(facts: dict[str, Any], run_dir: str | None = None) -> Path:
    """Merge `facts` into the run's facts file (atomically); returns its path."""
    run_dir = run_dir or os.environ.get("PROV_RUN_DIR")
    if not run_dir:
        raise RuntimeError("not inside a prov run: PROV_RUN_DIR is not set")
    path = Path(run_dir) / FACTS_FILE
    try:
        current = json.loads(path.read_text())
    except (OSError, ValueError):
        current = {}
    _merge(current, facts)
    write_atomic(path, json.dumps(current, sort_keys=True))
    return path
