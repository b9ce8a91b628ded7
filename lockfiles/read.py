"""Read locks prov did not necessarily write: PEP 751 `pylock*.toml` (prov, uv, pip),
`uv.lock`, and `requirements*.txt` as pip reads them (`lockfiles.requirements`).

Every reader returns the same small model; untrusted files are validated at the edge
(PEP 751 through `packaging.pylock`, the reference validator) and every failure is one
`LockError` line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lockfiles.errors import LockError
from lockfiles.kind import LockKind


@dataclass(frozen=True)
class LockedPackage:
    name: str
    version: str | None  # None for source trees (PEP 751: no version for directories)
    fingerprint: str | None = None  # prov's content fingerprint, when prov wrote the lock
    source: str = ""
    marker: str | None = None  # PEP 508 marker: the entry applies only where it is true
    arbitrary: bool = False  # `===`: the version string must match exactly (PEP 440)
    # a requirement that is not one exact pin (`>=3`, `~=1.2`, "" for any version): the
    # installed version must satisfy it; `version` is then None
    specifier: str | None = None


@dataclass
class Lock:
    kind: LockKind
    created_by: str
    packages: list[LockedPackage]
    environments: list[str] = field(default_factory=list)
    requires_python: str | None = None
    tool: dict[str, Any] = field(default_factory=dict)
    # the packages that apply to a marker environment, when that is more than each entry's
    # own marker (uv.lock: the graph reachable from the roots); None: filter by marker
    select: Callable[[dict[str, str]], list[LockedPackage]] | None = None
    # True: the lock names the whole environment, so an installed package it does not name
    # is a mismatch (pylock, uv.lock, a requirements file pinned with hashes throughout);
    # False: it constrains only what it names (other requirements files)
    exact: bool = True


def _toml(path: Path) -> dict[str, Any]:
    from provenance.model.inputs import InputError, read_toml

    try:  # bounded, regular files only, strict UTF-8, depth-limited
        return read_toml(path, "lock")
    except InputError as exc:
        raise LockError(str(exc)) from None


def read_pylock(path: Path, data: dict[str, Any]) -> Lock:
    from packaging.pylock import Pylock, PylockUnsupportedVersionError, PylockValidationError

    try:
        lock = Pylock.from_dict(data)
    except PylockUnsupportedVersionError:
        raise LockError(
            f"{path}: lock-version {data.get('lock-version')!r} is not supported "
            "(this prov reads PEP 751 lock-version 1.x)"
        ) from None
    except PylockValidationError as exc:
        raise LockError(f"{path}: not a valid PEP 751 lock: {exc}") from None
    packages: list[LockedPackage] = []
    for pkg in lock.packages:
        tool = (pkg.tool or {}).get("prov", {}) if pkg.tool else {}
        source = (
            "vcs"
            if pkg.vcs
            else "directory"
            if pkg.directory
            else "archive"
            if pkg.archive
            else "wheels"
            if pkg.wheels
            else "sdist"
            if pkg.sdist
            else "none"
        )
        packages.append(
            LockedPackage(
                name=str(pkg.name),
                version=str(pkg.version) if pkg.version is not None else None,
                fingerprint=tool.get("fingerprint"),
                source=source,
                marker=str(pkg.marker) if pkg.marker is not None else None,
            )
        )
    return Lock(
        kind=LockKind.PYLOCK,
        created_by=lock.created_by,
        packages=packages,
        environments=[str(m) for m in lock.environments or []],
        requires_python=str(lock.requires_python) if lock.requires_python else None,
        tool=dict((lock.tool or {}).get("prov", {})),
    )


def read_uv_lock(path: Path, data: dict[str, Any]) -> Lock:
    from lockfiles.uv_lock import read_uv_lock as read

    return read(path, data)


def read_requirements(path: Path) -> Lock:
    from lockfiles.requirements import read_requirements as read

    return read(path)


def read_lock(path: Path) -> Lock:
    """Any supported lock, by its name and content."""
    path = Path(path)
    if not path.exists():
        raise LockError(f"{path}: no such lock file")
    if path.suffix == ".txt":
        return read_requirements(path)
    data = _toml(path)
    if "lock-version" in data:
        return read_pylock(path, data)
    if path.name == "uv.lock" or ("package" in data and "version" in data):
        return read_uv_lock(path, data)
    if data.get("kind") or data.get("image"):
        raise LockError(f"{path}: an image lock; check it against an image SOURCE")
    raise LockError(f"{path}: not a lock prov can read (pylock.toml, uv.lock, requirements.txt)")


def is_environment_lock(path: Path) -> bool:
    """True for Python environment locks; False for anything else (an image lock)."""
    path = Path(path)
    if path.suffix == ".txt" or path.name == "uv.lock":
        return True
    if path.name == "pylock.toml" or (path.name.startswith("pylock.") and path.suffix == ".toml"):
        return True
    from provenance.model.inputs import InputError, read_input

    try:
        head = read_input(path, "lock")[:4096].decode("utf-8", "replace")
    except InputError:
        return True  # let the environment reader report it in one line
    return "lock-version" in head
