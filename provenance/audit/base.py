"""The audit interface: packages in, findings out, plus what could NOT be audited.

Like pip-audit: frozen dataclasses and one small abstract base; one module per backend.
A package that a backend could not check is `skipped`, never counted as clean.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Any

from provenance.model.errors import EXIT_DIFFERS, EXIT_UNAVAILABLE, ProvError

# `prov audit`'s exit codes, from the one table: 1 vulnerabilities found, 4 nothing audited.
EXIT_VULNERABLE = EXIT_DIFFERS
EXIT_NOT_AUDITED = EXIT_UNAVAILABLE


@dataclass(frozen=True)
class Package:
    name: str  # PEP 503 normalised
    version: str


@dataclass(frozen=True)
class Finding:
    package: Package
    id: str
    aliases: tuple[str, ...] = ()
    summary: str = ""
    fix_versions: tuple[str, ...] = ()


@dataclass(frozen=True)
class AuditResult:
    backend: str  # "osv-db DIR" or "pip-audit (osv URL)"
    audited: tuple[Package, ...]
    findings: tuple[Finding, ...]
    skipped: tuple[tuple[Package, str], ...] = ()  # (package, why)
    database: dict[str, Any] = field(default_factory=dict)  # digest, newest modified, ...

    @property
    def vulnerable(self) -> tuple[Package, ...]:
        return tuple(sorted({f.package for f in self.findings}, key=lambda p: p.name))

    def to_json(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "database": self.database,
            "packages": len(self.audited) + len(self.skipped),
            "audited": len(self.audited),
            "not_audited": len(self.skipped),
            "skipped": [
                {"name": p.name, "version": p.version, "reason": why} for p, why in self.skipped
            ],
            "findings": [
                {
                    "name": f.package.name,
                    "version": f.package.version,
                    "id": f.id,
                    "aliases": list(f.aliases),
                    "summary": f.summary,
                    "fix_versions": list(f.fix_versions),
                }
                for f in self.findings
            ],
        }


class ServiceUnreachable(ProvError):
    """No vulnerability service answered; nothing was audited."""

    exit_code = EXIT_NOT_AUDITED


class AuditBackend(abc.ABC):
    @abc.abstractmethod
    def audit(self, packages: list[Package]) -> AuditResult: ...


def packages_of(facts: dict[str, Any]) -> list[Package]:
    """The Python packages of a manifest (host, run or image) as audit input."""
    python = facts.get("python") if isinstance(facts.get("python"), dict) else {}
    pkgs = python.get("packages") if isinstance(python.get("packages"), dict) else {}
    out = []
    for name in sorted(pkgs):
        entry = pkgs[name]
        if isinstance(entry, dict) and isinstance(entry.get("version"), str):
            out.append(Package(name, entry["version"]))
    return out
