"""`uv.lock` read as `uv sync` installs from it (uv 0.13, lock `version = 1`).

A uv.lock is a universal resolution: every package for every platform. What one environment
holds is the part of the graph reachable from the roots with each edge's marker true there:
- roots: the project at the workspace root (`source = { virtual/editable = "." }`), or,
  for a workspace root without a project of its own, every `[manifest] members` entry;
- a root's `dev` dependency group is followed (uv's default group), its extras are not
  (`uv sync` without `--extra`); an edge `{ name, extra = [...] }` follows those extras of
  the target; an edge naming `version` or `source` picks that entry of a forked package;
- `source = { virtual = ... }` packages are not installed (no dist-info), their edges are.
Markers in uv.lock are simplified against `requires-python`, which `verify` checks first.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

from lockfiles.errors import LockError
from lockfiles.kind import LockKind
from lockfiles.read import Lock, LockedPackage

DEFAULT_GROUPS = ("dev",)


def _entries(path: Path, data: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    by_name: dict[str, list[dict[str, Any]]] = {}
    for pkg in data.get("package", []):
        if not isinstance(pkg, dict) or not isinstance(pkg.get("name"), str):
            raise LockError(f"{path}: a [[package]] entry has no name")
        by_name.setdefault(canonicalize_name(pkg["name"]), []).append(pkg)
    return by_name


def _roots(data: dict[str, Any], by_name: dict[str, list[dict[str, Any]]]) -> list[dict]:
    at_root = [
        pkg for entries in by_name.values() for pkg in entries
        if isinstance(pkg.get("source"), dict)
        and any(pkg["source"].get(k) == "." for k in ("virtual", "editable", "directory"))
    ]
    if at_root:
        return at_root
    members = (data.get("manifest") or {}).get("members") or []
    return [by_name[canonicalize_name(m)][0] for m in members if canonicalize_name(m) in by_name]


def _target(edge: dict[str, Any], by_name: dict[str, list[dict]], path: Path) -> dict:
    name = canonicalize_name(str(edge.get("name", "")))
    candidates = by_name.get(name)
    if not candidates:
        raise LockError(f"{path}: a dependency names {name!r}, which has no [[package]]")
    for key in ("version", "source"):
        if key in edge:
            candidates = [c for c in candidates if c.get(key) == edge[key]] or candidates
    return candidates[0]


def _edges(pkg: dict[str, Any], extras: set[str], groups: tuple[str, ...]) -> list[dict]:
    edges = list(pkg.get("dependencies") or [])
    optional = pkg.get("optional-dependencies") or {}
    for extra in sorted(extras):
        edges += optional.get(extra, [])
    dev = pkg.get("dev-dependencies") or {}
    for group in groups:
        edges += dev.get(group, [])
    return edges


def reachable(path: Path, data: dict[str, Any], env: dict[str, str]) -> list[LockedPackage]:
    """The packages `uv sync` installs from this lock into an environment like `env`."""
    from packaging.markers import Marker

    by_name = _entries(path, data)
    todo: list[tuple[dict, frozenset[str], tuple[str, ...]]] = [
        (root, frozenset(), DEFAULT_GROUPS) for root in _roots(data, by_name)
    ]
    done: set[tuple[int, frozenset[str], tuple[str, ...]]] = set()
    installed: dict[int, dict[str, Any]] = {}
    while todo:
        pkg, extras, groups = todo.pop()
        if (id(pkg), extras, groups) in done:
            continue
        done.add((id(pkg), extras, groups))
        if "virtual" not in (pkg.get("source") or {}):
            installed[id(pkg)] = pkg
        for edge in _edges(pkg, set(extras), groups):
            marker = edge.get("marker")
            if marker and not Marker(str(marker)).evaluate(env):
                continue
            target = _target(edge, by_name, path)
            todo.append((target, frozenset(edge.get("extra") or ()), ()))
    return [_locked(pkg) for pkg in installed.values()]


def _locked(pkg: dict[str, Any]) -> LockedPackage:
    source = pkg.get("source") or {}
    kind = next(iter(source), "") if isinstance(source, dict) else ""
    is_tree = kind in ("editable", "directory")
    return LockedPackage(canonicalize_name(pkg["name"]), None if is_tree else pkg.get("version"),
                         source=kind)


def read_uv_lock(path: Path, data: dict[str, Any]) -> Lock:
    if data.get("version") not in (1,):
        raise LockError(f"{path}: uv.lock version {data.get('version')!r} is not supported (1)")
    by_name = _entries(path, data)
    everything = [_locked(p) for entries in by_name.values() for p in entries
                  if "virtual" not in (p.get("source") or {})]
    return Lock(
        kind=LockKind.UV_LOCK,
        created_by="uv",
        packages=everything,
        requires_python=data.get("requires-python"),
        select=lambda env: reachable(path, data, env),
    )
