"""What the command runs in: its interpreter, the snapshot (cached) and git state, its env.

The snapshot (and its cache) describe prov's own environment; variables given only to the
command (`run_supervised(env_extra=...)`, e.g. the runners' VLLM_* settings) would
otherwise reach the workload without reaching its identity (found by
`prov selftest identity`), so the relevant ones join the run's `env` section.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import shutil
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from provenance.model import Manifest
from provenance.model.redact import KnownSecrets, redact_value
from provenance.snapshot import CachedSnapshot, cached_snapshot
from provenance.store.manifests import adds_nothing, run_manifest


def workload_python(argv: Sequence[str]) -> str | None:
    """The interpreter a `python ...` command will run, when it is not prov's own."""
    name = os.path.basename(argv[0])
    if not re.fullmatch(r"python[0-9.]*", name):
        return None
    found = shutil.which(argv[0])
    if not found:
        return None
    found = os.path.abspath(found)
    if os.path.dirname(found) == os.path.dirname(sys.executable):
        return None  # same bin directory: the same environment as prov's
    return found


def snapshot_and_git(python: str | None, cwd: Path) -> tuple[CachedSnapshot, tuple[dict, Any]]:
    """Snapshot (cache) and git state concurrently; git's subprocesses overlap the stats."""
    from provenance.snapshot import git_state

    git_result: list = []

    def read_git() -> None:
        try:
            git_result.append(git_state(cwd))
        except Exception as exc:  # recorded, never fatal
            git_result.append(({"error": f"{type(exc).__name__}: {exc}"[:300]}, None))

    t = threading.Thread(target=read_git, daemon=True)
    t.start()
    snap = cached_snapshot(python)
    t.join()
    return snap, git_result[0]


def environment_digest(python: str | None = None) -> str:
    """The identity digest of the environment `python` (None: prov's own) runs in, as
    `prov exec` snapshots it (from the snapshot cache when nothing changed)."""
    return cached_snapshot(python).manifest_digest


def command_env(env_extra: Mapping[str, str] | None) -> dict[str, str]:
    """The identity-relevant variables of `env_extra`, redacted as the snapshot redacts."""
    from provenance.collectors.env import relevant

    return {k: redact_value(k, str(v)) for k, v in (env_extra or {}).items() if relevant(k)}


def without_known(snap: CachedSnapshot, known: KnownSecrets | None,
                  key: bytes | None = None) -> CachedSnapshot:
    """The snapshot with the run's known secret values hidden: a value redaction hid in the
    run's argv, tags or params that also stands under a variable the snapshot records by a
    harmless name (`--password X` and `VLLM_NOTE=X`). Unchanged, and no walk of its leaves,
    when none occurs (the common case)."""
    if not known or not known.occurs_in(snap.text):
        return snap
    m = Manifest(known.hide_in_tree(snap.manifest().facts, key))
    text = m.to_json()
    return dataclasses.replace(
        snap, text=text, manifest_digest=m.digest(),
        object_digest="sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest())


def with_command_env(snap: CachedSnapshot, env_extra: Mapping[str, str] | None) -> CachedSnapshot:
    """The snapshot with the command's extra environment in its `env` section (unchanged,
    text and digests reused, when it adds nothing)."""
    extra = command_env(env_extra)
    if not extra:
        return snap
    base = snap.manifest()
    if adds_nothing(base, extra):
        return snap
    m = run_manifest(base, env=extra)
    text = m.to_json()
    return dataclasses.replace(
        snap, text=text, manifest_digest=m.digest(),
        object_digest="sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest())
