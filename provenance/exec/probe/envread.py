"""What the run's processes took from their environment, as run facts.

- `env.<NAME>`: each variable a probed process read through `os.environ` (`os.getenv`,
  `.get`, `in`, `[...]`) and that was set in that process's environment at start, with
  that value, whatever its name. Merged into the run's `env` section below the snapshot's
  own keys. Several processes with other values: the sorted values. A variable read but
  unset is left out: a run where it is set has the key and the other not, which refuses as
  well; and libraries look up dozens of unset names on some code paths only (transformers'
  `TRANSFORMERS_SDPA_FORCE_GQA` under sdpa alone), which must not differ two runs in one
  environment.
- `runtime.process_env.<NAME>`: a variable whose value at some process's start differs
  from what prov gave the command (a child started, or a script re-executed with
  `os.execve`, with another `PYTHONHASHSEED`): the distinct values those processes had.

prov's own per-run variables (`PROV_*`) are left out of both. Secrets are hidden by the
caller (`redact_tree` over all probe facts, keyed by the store: two tokens still differ).
The reference environment is written by `environment()` into the run's probe directory,
which `collect` removes before anything of the run directory reaches the store.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from provenance.exec.probe.processes import Process

UNSET = "<unset>"
COMMAND_ENV = "command-env"  # not *.json: those are the processes' files


def _ours(name: str) -> bool:
    return name.startswith("PROV_")


def write_command_env(probe_dir: Path, env: Mapping[str, str]) -> None:
    """What prov gives the command, for `process_env_facts` (mode 0600: it may hold a
    secret until `collect` removes the directory)."""
    path = probe_dir / COMMAND_ENV
    path.touch(mode=0o600)
    path.write_text(json.dumps({k: str(v) for k, v in env.items()}), encoding="utf-8")


def read_command_env(probe_dir: Path) -> dict[str, str] | None:
    try:
        doc = json.loads((probe_dir / COMMAND_ENV).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict):
        return None
    return {k: v for k, v in doc.items() if isinstance(k, str) and isinstance(v, str)}


def _one(values: set[str]) -> str | list[str]:
    return next(iter(values)) if len(values) == 1 else sorted(values)


def env_read_facts(processes: list[Process]) -> dict[str, Any]:
    """`env.<NAME>` for every variable a process read that was set at its start, with
    that value."""
    seen: dict[str, set[str]] = {}
    for p in processes:
        if p.environ is None:
            continue
        for name in p.env_read:
            if not _ours(name) and name in p.environ:
                seen.setdefault(name, set()).add(p.environ[name])
    return {name: _one(values) for name, values in sorted(seen.items())}


def process_env_facts(processes: list[Process],
                      command_env: Mapping[str, str] | None) -> dict[str, Any]:
    """`runtime.process_env.<NAME>`: the values, at a process's start, that differ from
    the command's environment; {} without a reference (a run not started by prov)."""
    if command_env is None:
        return {}
    seen: dict[str, set[str]] = {}
    for p in processes:
        if p.environ is None:
            continue
        for name in sorted(p.environ.keys() | command_env.keys()):
            value = p.environ.get(name, UNSET)
            if not _ours(name) and value != command_env.get(name, UNSET):
                seen.setdefault(name, set()).add(value)
    return {name: _one(values) for name, values in sorted(seen.items())}
