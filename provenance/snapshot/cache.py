"""Snapshots for `prov exec`, kept (`provenance.collectors.stamped`) until anything a
snapshot depends on changes.

- The *key* covers what can be read without snapshotting: the interpreter as named, the
  relevant environment variables (those the env collector keeps, plus PYTHON*), the boot
  id (CPU flags, kernel), the NVIDIA driver version file, the CPUs this process may use and
  prov's version.
- The *dependencies*, stamped: the interpreter, every sys.path directory (installing,
  upgrading or removing a distribution renames a dist-info directory in it), the dpkg/apk
  databases, os-release, and prov's own collector code (a changed collector must not serve
  old snapshots).
Host facts (time, pid) are those of the kept snapshot: the run record carries its own
timestamps. The entry keeps the manifest's exact JSON text and both digests, so a warm hit
neither collects, parses nor re-hashes the manifest.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from provenance.collectors import stamped

_SYSTEM_DEPS = (
    "/var/lib/dpkg/status",
    "/var/lib/dpkg/status.d",
    "/lib/apk/db/installed",
    "/etc/os-release",
    "/usr/lib/os-release",
)
_PY_ENV = ("PYTHONPATH", "PYTHONHOME", "PYTHONNOUSERSITE", "PYTHONUSERBASE", "PYTHONSAFEPATH")


def _read(path: str) -> str:
    try:
        with open(path) as fh:
            return fh.read()
    except OSError:
        return ""


def _code_files() -> list[str]:
    """prov's code a snapshot's content depends on: the collectors (standalone readers
    included), the snapshot itself, and the model's classification and redaction rules."""
    import provenance

    root = Path(provenance.__file__).parent
    files = [*sorted((root / "snapshot").glob("*.py")), root / "model" / "classes.py",
             root / "model" / "redact.py", *sorted((root / "model").glob("secret_*.py")),
             *sorted((root / "collectors").rglob("*.py"))]
    return [str(f) for f in files]


def cache_key(python: str | None) -> str:
    """The entry file of the snapshot of `python` (None: this interpreter) in this
    environment."""
    import provenance
    from provenance.collectors.env import relevant

    env = sorted((k, v) for k, v in os.environ.items() if relevant(k) or k in _PY_ENV)
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = [os.cpu_count() or 0]
    material = [
        provenance.__version__,
        os.path.abspath(python) if python else sys.executable,
        sys.version if python is None else "",
        env,
        _read("/proc/sys/kernel/random/boot_id"),
        _read("/proc/driver/nvidia/version"),
        cpus,
    ]
    return stamped.entry_path("snapshot", material)


def _dependencies(manifest_facts: dict[str, Any], python: str | None) -> dict[str, Any]:
    py = manifest_facts.get("python")
    paths = list(py.get("sys_path", [])) if isinstance(py, dict) else []
    if python is None:
        paths = [p for p in sys.path if p] or paths
    interpreter = os.path.abspath(python) if python else sys.executable
    return stamped.stamps([interpreter, *paths, *_SYSTEM_DEPS, *_code_files()])


@dataclass
class CachedSnapshot:
    """A snapshot as exec needs it: bytes to store, digests, warnings, and how it was got."""

    text: str  # the manifest's JSON document
    object_digest: str  # sha256 of `text` (the store object's name)
    manifest_digest: str  # the identity digest
    warnings: list[str] = field(default_factory=list)
    hit: bool = False
    key: str = ""
    deps: dict[str, Any] = field(default_factory=dict)
    settled: bool = False  # every dependency older than the racy window: stamps are proof

    def manifest(self):
        from provenance.model import Manifest

        return Manifest.loads(self.text, verify=False)


def _load(key: str) -> CachedSnapshot | None:
    value, deps = stamped.load_entry(key) or (None, None)
    try:
        return CachedSnapshot(text=value["text"], object_digest=value["object_digest"],
                              manifest_digest=value["manifest_digest"],
                              warnings=list(value["warnings"]), hit=True, key=key,
                              deps=deps, settled=True)
    except (TypeError, KeyError):
        return None


def fresh_snapshot(python: str | None = None) -> CachedSnapshot:
    """Take a snapshot now (no cache), in the shape exec uses."""
    from provenance.snapshot.take import SnapshotOptions, take_snapshot

    started_ns = time.time_ns()
    manifest, warnings = take_snapshot(SnapshotOptions(python=python))
    text = manifest.to_json()
    deps = _dependencies(manifest.facts, python)
    return CachedSnapshot(
        text=text,
        object_digest="sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest(),
        manifest_digest=manifest.digest(),
        warnings=warnings,
        deps=deps,
        settled=all(stamped.settled(s, started_ns) for s in deps.values()),
    )


def cached_snapshot(python: str | None = None, use_cache: bool = True) -> CachedSnapshot:
    """The snapshot of this environment (or of interpreter `python`), from cache when valid."""
    key = cache_key(python)
    if use_cache:
        hit = _load(key)
        if hit is not None:
            return hit
    started_ns = time.time_ns()
    snap = fresh_snapshot(python)
    snap.key = key
    value = {"text": snap.text, "object_digest": snap.object_digest,
             "manifest_digest": snap.manifest_digest, "warnings": snap.warnings}
    stamped.save(key, value, snap.deps, started_ns)
    return snap


def still_valid(snap: CachedSnapshot, python: str | None = None) -> bool:
    """True when nothing a snapshot depends on changed since `snap` (stats only). A snapshot
    whose dependencies were still inside the racy window proves nothing: False."""
    return snap.settled and cache_key(python) == snap.key and stamped.unchanged(snap.deps)
