"""Check an environment's manifest against a lock: missing, extra and changed packages,
and installed files that no longer match their RECORD."""

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


@dataclass
class Report:
    lock_kind: str
    checked: int
    mismatches: list[Mismatch] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.mismatches

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "lock_kind": self.lock_kind,
            "checked": self.checked,
            "ignored": self.ignored,
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


def verify(lock: Lock, manifest: Manifest) -> Report:
    from packaging.version import InvalidVersion, Version

    py = manifest.facts.get("python")
    if not isinstance(py, dict) or not isinstance(py.get("packages"), dict):
        raise LockError("the environment's Python packages could not be collected")
    env = marker_environment(manifest)
    _check_platform(lock, env)
    locked = _applicable(lock, env)
    installed: dict[str, Any] = py["packages"]
    report = Report(lock_kind=f"{lock.kind} by {lock.created_by}", checked=len(locked))
    for name in sorted(set(locked) | set(installed)):
        want, have = locked.get(name), installed.get(name)
        if want is None:
            if lock.created_by != "prov-llm" and name in TOOLING:
                report.ignored.append(name)
                continue
            report.mismatches.append(Mismatch(name, "extra", "", have["version"]))
            continue
        if have is None:
            report.mismatches.append(Mismatch(name, "missing", want.version or want.source, ""))
            continue
        if want.version is not None:
            try:
                same = not want.arbitrary and Version(want.version) == Version(have["version"])
            except InvalidVersion:
                same = False
            same = same or want.version == have["version"]
            if not same:
                report.mismatches.append(Mismatch(name, "version", want.version, have["version"]))
                continue
        if want.fingerprint and have.get("fingerprint") and want.fingerprint != have["fingerprint"]:
            report.mismatches.append(
                Mismatch(name, "fingerprint", want.fingerprint, have["fingerprint"])
            )
        for kind in ("modified", "missing"):
            for path in have.get(f"{kind}_files", []):
                report.mismatches.append(Mismatch(name, f"{kind}-file", "as in RECORD", path))
    return report
