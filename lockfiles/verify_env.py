"""Check an environment's manifest against a lock: missing, extra and changed packages,
and installed files that no longer match their RECORD.

An installed package the lock does not name is a mismatch only when the lock is exact (it
names a whole environment: a pylock, a uv.lock, a requirements file pinned with hashes
throughout, or any lock with `exact=True`); otherwise it is listed as an extra, for
information: a requirements file constrains what it names and says nothing of the rest."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lockfiles.read import Lock, LockedPackage, LockError
from provenance.model import Manifest

# Installers lock what they install, not themselves: a venv made by pip holds pip.
TOOLING = ("pip", "setuptools", "wheel")


@dataclass(frozen=True)
class Mismatch:
    package: str
    problem: str  # missing, extra, version, fingerprint, modified-files, missing-files
    locked: str
    installed: str


@dataclass(frozen=True)
class Extra:
    package: str
    installed: str


@dataclass
class Report:
    lock_kind: str
    checked: int
    exact: bool = True
    mismatches: list[Mismatch] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    extras: list[Extra] = field(default_factory=list)  # not named, not exact: information

    @property
    def ok(self) -> bool:
        return not self.mismatches

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "lock_kind": self.lock_kind,
            "checked": self.checked,
            "exact": self.exact,
            "ignored": self.ignored,
            "extras": [e.__dict__ for e in self.extras],
            "mismatches": [m.__dict__ for m in self.mismatches],
        }


def marker_environment(manifest: Manifest) -> dict[str, str]:
    """PEP 508 marker variables of the environment a manifest describes."""
    py = manifest.facts.get("python", {})
    os_facts = manifest.facts.get("os", {})
    version = str(py.get("version", ""))
    system = str(os_facts.get("system", ""))
    return {
        "implementation_name": str(py.get("implementation", "")),
        "implementation_version": version,
        "platform_machine": str(os_facts.get("machine", "")),
        "platform_system": system,
        "sys_platform": "linux" if system == "Linux" else system.lower(),
        "os_name": "posix" if system in ("Linux", "Darwin") else "nt",
        "platform_python_implementation": "CPython"
        if py.get("implementation") == "cpython"
        else "",
        "python_version": ".".join(version.split(".")[:2]),
        "python_full_version": version,
        "platform_release": "",
        "platform_version": "",
        "extra": "",
    }


def _check_platform(lock: Lock, env: dict[str, str]) -> None:
    from packaging.markers import Marker
    from packaging.specifiers import SpecifierSet

    if lock.environments and not any(Marker(m).evaluate(env) for m in lock.environments):
        here = ", ".join(
            f"{k}={env[k]}" for k in ("sys_platform", "platform_machine", "python_full_version")
        )
        raise LockError(
            f"the lock is for another platform: {'; '.join(lock.environments)} ({here})"
        )
    if lock.requires_python and env["python_full_version"] not in SpecifierSet(
        lock.requires_python
    ):
        raise LockError(
            f"the lock requires Python {lock.requires_python}, this is {env['python_full_version']}"
        )


def _applicable(lock: Lock, env: dict[str, str]) -> dict[str, LockedPackage]:
    from packaging.markers import Marker

    chosen: dict[str, LockedPackage] = {}
    if lock.select is not None:
        return {pkg.name: pkg for pkg in lock.select(env)}
    for pkg in lock.packages:
        if pkg.marker and not Marker(pkg.marker).evaluate(env):
            continue
        chosen[pkg.name] = pkg
    return chosen


def verify_environment(lock: Lock, manifest: Manifest, exact: bool | None = None) -> Report:
    """The environment against the lock; `exact` overrides the lock's own `exact`."""
    py = manifest.facts.get("python")
    if not isinstance(py, dict) or not isinstance(py.get("packages"), dict):
        raise LockError("the environment's Python packages could not be collected")
    env = marker_environment(manifest)
    _check_platform(lock, env)
    locked = _applicable(lock, env)
    installed: dict[str, Any] = py["packages"]
    exact = lock.exact if exact is None else exact
    report = Report(f"{lock.kind} by {lock.created_by}", len(locked), exact)
    for name in sorted(set(locked) | set(installed)):
        want, have = locked.get(name), installed.get(name)
        if want is None:
            if lock.created_by != "prov-llm" and name in TOOLING:
                report.ignored.append(name)
            elif exact:
                report.mismatches.append(Mismatch(name, "extra", "", have["version"]))
            else:
                report.extras.append(Extra(name, have["version"]))
        elif have is None:
            wanted = want.version or want.specifier or want.source
            report.mismatches.append(Mismatch(name, "missing", wanted, ""))
        else:
            report.mismatches += _compare(name, want, have)
    return report


def _same_version(want: LockedPackage, have: str) -> bool:
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version

    try:
        if want.specifier is not None:  # a range: any satisfying version, pre-releases too
            return SpecifierSet(want.specifier).contains(have, prereleases=True)
        if want.version is None:
            return True
        same = not want.arbitrary and Version(want.version) == Version(have)
    except (InvalidVersion, InvalidSpecifier):
        same = False
    return same or want.version == have


def _compare(name: str, want: LockedPackage, have: dict[str, Any]) -> list[Mismatch]:
    """The mismatches of one package the lock names and the environment holds."""
    if not _same_version(want, have["version"]):
        locked = want.version if want.specifier is None else want.specifier or "any"
        return [Mismatch(name, "version", str(locked), have["version"])]
    found = []
    if want.fingerprint and have.get("fingerprint") and want.fingerprint != have["fingerprint"]:
        found.append(Mismatch(name, "fingerprint", want.fingerprint, have["fingerprint"]))
    for kind in ("modified", "missing"):
        for path in have.get(f"{kind}_files", []):
            found.append(Mismatch(name, f"{kind}-file", "as in RECORD", path))
    return found
