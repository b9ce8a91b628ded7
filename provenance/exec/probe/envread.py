"""What the run's processes took from their environment, as run facts.

- `env.<NAME>`: each variable a probed process read through `os.environ` (`os.getenv`,
  `.get`, `in`, `[...]`) and that was set in that process's environment at start, with
  that value, whatever its name. Merged into the run's `env` section below the snapshot's
  own keys. Several processes with other values: the sorted values. A variable read but
  unset is left out: a run where it is set has the key and the other not, which refuses as
  well; and libraries look up dozens of unset names on some code paths only (transformers'
  `TRANSFORMERS_SDPA_FORCE_GQA` under sdpa alone), which must not differ two runs in one
  environment. What the run set itself is no input from its environment: a name the
  process set before reading it is not noted (the probe's `reads`), and a process started
  by a probed one (a `child`, a fork or spawn child, vLLM's engine core) counts a read only
  where its value is the command's: another value was put there by its parent, whose code,
  inputs and reads are in the record. Such a child exists on some runs only (torch's
  compile workers, on a cold compile cache alone, read the `LD_LIBRARY_PATH` and
  `TORCHINDUCTOR_COMPILE_THREADS` vLLM set): counting it made identical runs differ.
- `runtime.process_env.<NAME>`: a variable whose value at the start of a process no probed
  process started (the command, a script re-executed with `os.execve` with another
  `PYTHONHASHSEED`) differs from what prov gave the command: the distinct values those
  processes had. The same for the processes the run started is `probe.child_env.<NAME>`
  (context: their parent's doing, as above).
- `probe.command_env.<NAME>`: every variable of the command's environment by a keyed
  digest of its value (context; `command_env_digests`).

prov's own per-run variables (`PROV_*`) are left out of both. Secrets are hidden by the
caller (`redact_tree` over all probe facts, keyed by the store: two tokens still differ).
The reference environment is written by `environment()` into the run's probe directory,
which `collect` removes before anything of the run directory reaches the store.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from provenance.exec.probe.processes import Process
from provenance.model.run_sections import Agreed

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


def command_env_digests(probe_dir: Path, key: bytes) -> dict[str, str]:
    """`probe.command_env.<NAME>`: every variable prov gave the command, by a keyed digest
    of its value (context): where one run read a variable the other did not (a JIT only
    one attention backend runs reads `CC`), the gate sees whether the other run's
    environment held the same value (gate/env_read.py)."""
    from provenance.model.redact import keyed_mac

    env = read_command_env(probe_dir) or {}
    return {name: keyed_mac(value, key) for name, value in sorted(env.items())
            if not _ours(name)}


def _one(values: set[str]) -> str | list[str]:
    return next(iter(values)) if len(values) == 1 else sorted(values)


def started_by_the_run(processes: list[Process]) -> set[int]:
    """The pids of the processes a probed process started (forked, spawned, or ran as a
    child): their environment at start is their parent's doing."""
    pids = {p.pid for p in processes}
    return {p.pid for p in processes if p.forked_from is not None or p.ppid in pids}


def env_read_facts(processes: list[Process],
                   command_env: Mapping[str, str] | None = None) -> dict[str, Agreed]:
    """`env.<NAME>` for every variable a process read that was set at its start, with
    that value; in a process the run started, only where the value is the command's."""
    seen: dict[str, set[str]] = {}
    children = started_by_the_run(processes)
    for p in processes:
        if p.environ is None:
            continue
        for name in p.env_read:
            if _ours(name) or name not in p.environ:
                continue
            value = p.environ[name]
            if (command_env is not None and p.pid in children
                    and value != command_env.get(name)):
                continue  # set by its parent, not read from the run's environment
            seen.setdefault(name, set()).add(value)
    return {name: _one(values) for name, values in sorted(seen.items())}


def _differing(processes: list[Process], command_env: Mapping[str, str]) -> dict[str, Agreed]:
    seen: dict[str, set[str]] = {}
    for p in processes:
        if p.environ is None:
            continue
        for name in sorted(p.environ.keys() | command_env.keys()):
            value = p.environ.get(name, UNSET)
            if not _ours(name) and value != command_env.get(name, UNSET):
                seen.setdefault(name, set()).add(value)
    return {name: _one(values) for name, values in sorted(seen.items())}


def process_env_facts(processes: list[Process],
                      command_env: Mapping[str, str] | None) -> dict[str, Agreed]:
    """`runtime.process_env.<NAME>`: the values, at the start of a process the run did not
    start itself, that differ from the command's environment; {} without a reference (a
    run not started by prov)."""
    if command_env is None:
        return {}
    children = started_by_the_run(processes)
    return _differing([p for p in processes if p.pid not in children], command_env)


def child_env_facts(processes: list[Process],
                    command_env: Mapping[str, str] | None) -> dict[str, Agreed]:
    """`probe.child_env.<NAME>`: the same for the processes the run started (context)."""
    if command_env is None:
        return {}
    children = started_by_the_run(processes)
    return _differing([p for p in processes if p.pid in children], command_env)
