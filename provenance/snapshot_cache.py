"""A cache of snapshots for `prov exec`, keyed on everything a snapshot depends on.

Two levels, because which files matter is only known after one snapshot:
- the *key* covers what can be read without snapshotting: the interpreter (path and
  file identity), the relevant environment variables (those the env collector keeps,
  plus PYTHON*), the boot id (CPU flags, kernel), the NVIDIA driver version file, the CPUs
  this process may use, and prov's own collector code;
- each entry lists *dependencies* with their (mtime_ns, size) at snapshot time: every
  sys.path directory (installing, upgrading or removing a distribution renames a
  dist-info directory in it), the dpkg/apk databases and os-release.
A hit needs the key to match and every dependency to be unchanged. Host facts (time, pid)
are those of the cached snapshot: the run record carries its own timestamps.

The entry keeps the manifest's exact JSON text and both digests, so a warm hit neither
collects, parses nor re-hashes the manifest.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from provenance.model.atomic import write_atomic

_SYSTEM_DEPS = (
    "/var/lib/dpkg/status",
    "/var/lib/dpkg/status.d",
    "/lib/apk/db/installed",
    "/etc/os-release",
    "/usr/lib/os-release",
)
_PY_ENV = ("PYTHONPATH", "PYTHONHOME", "PYTHONNOUSERSITE", "PYTHONUSERBASE", "PYTHONSAFEPATH")
ENTRY_VERSION = 1


def cache_dir() -> Path:
    from provenance.collectors.answer_cache import cache_root

    return Path(cache_root()) / "snapshots"


def _stat(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_size]


def _read(path: str) -> str:
    try:
        with open(path) as fh:
            return fh.read()
    except OSError:
        return ""


def _code_stamp() -> list[Any]:
    """prov's own collector code: a changed collector must not serve old snapshots."""
    import provenance

    root = Path(provenance.__file__).parent
    files = [root / "snapshot.py", root / "model" / "classes.py", root / "model" / "redact.py",
             *sorted((root / "model").glob("secret_*.py"))]  # redaction's rules
    files += sorted((root / "collectors").rglob("*.py"))  # standalone/ readers included
    return [provenance.__version__] + [_stat(str(f)) for f in files]


def cache_key(python: str | None) -> str:
    from provenance.collectors.env import relevant

    interpreter = os.path.abspath(python) if python else sys.executable
    env = sorted((k, v) for k, v in os.environ.items() if relevant(k) or k in _PY_ENV)
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = [os.cpu_count() or 0]
    material = [
        ENTRY_VERSION,
        interpreter,
        _stat(interpreter),
        sys.version if python is None else "",
        env,
        _read("/proc/sys/kernel/random/boot_id"),
        _read("/proc/driver/nvidia/version"),
        cpus,
        _code_stamp(),
    ]
    return hashlib.sha256(json.dumps(material).encode()).hexdigest()


def _dependencies(manifest_facts: dict[str, Any], python: str | None) -> dict[str, Any]:
    py = manifest_facts.get("python")
    paths = list(py.get("sys_path", [])) if isinstance(py, dict) else []
    if python is None:
        paths = [p for p in sys.path if p] or paths
    return {p: _stat(p) for p in [*paths, *_SYSTEM_DEPS]}


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

    def manifest(self):
        from provenance.model import Manifest

        return Manifest.loads(self.text, verify=False)


def _load(path: Path, key: str) -> CachedSnapshot | None:
    try:
        entry = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(entry, dict) or entry.get("version") != ENTRY_VERSION:
        return None
    deps = entry.get("deps", {})
    for p, stamp in deps.items():
        if _stat(p) != stamp:
            return None
    text = entry.get("text", "")
    return CachedSnapshot(
        text=text,
        object_digest=entry["object_digest"],
        manifest_digest=entry["manifest_digest"],
        warnings=list(entry.get("warnings", [])),
        hit=True,
        key=key,
        deps=deps,
    )


def _save(path: Path, snap: CachedSnapshot) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    entry = {
        "version": ENTRY_VERSION,
        "deps": snap.deps,
        "object_digest": snap.object_digest,
        "manifest_digest": snap.manifest_digest,
        "warnings": snap.warnings,
        "text": snap.text,
    }
    write_atomic(path, json.dumps(entry))


def fresh_snapshot(python: str | None = None) -> CachedSnapshot:
    """Take a snapshot now (no cache), in the shape exec uses."""
    from provenance.snapshot import SnapshotOptions, take_snapshot

    # Stamped *before* collecting, so a change during the snapshot invalidates the entry
    # rather than being hidden by it (a foreign interpreter's sys.path is known only after).
    deps = _dependencies({}, None) if python is None else None
    manifest, warnings = take_snapshot(SnapshotOptions(python=python))
    text = manifest.to_json()
    return CachedSnapshot(
        text=text,
        object_digest="sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest(),
        manifest_digest=manifest.digest(),
        warnings=warnings,
        deps=deps if deps is not None else _dependencies(manifest.facts, python),
    )


def cached_snapshot(python: str | None = None, use_cache: bool = True) -> CachedSnapshot:
    """The snapshot of this environment (or of interpreter `python`), from cache when valid."""
    key = cache_key(python)
    path = cache_dir() / f"{key}.json"
    if use_cache:
        hit = _load(path, key)
        if hit is not None:
            return hit
    snap = fresh_snapshot(python)
    snap.key = key
    with contextlib.suppress(OSError):  # an unwritable cache only costs speed
        _save(path, snap)
    return snap


def still_valid(snap: CachedSnapshot, python: str | None = None) -> bool:
    """True when nothing a snapshot depends on changed since `snap` (cheap: stats only)."""
    if cache_key(python) != snap.key:
        return False
    return all(_stat(p) == stamp for p, stamp in snap.deps.items())
