"""Online audit through pip-audit's own OSV client (`pip_audit._service.OsvService`).

pip-audit has no public library API; its service classes are what its CLI uses. The client
is given `osv_url`, so it can talk to OSV itself or any OSV-compatible mirror (tests run
one on loopback). The first failure to reach the service stops the audit: every package
is then *not audited*, and the caller says so instead of "no vulnerabilities".
"""

from __future__ import annotations

from provenance.audit.base import (
    AuditBackend,
    AuditResult,
    Finding,
    Package,
    ServiceUnreachable,
)

DEFAULT_OSV_URL = "https://api.osv.dev/v1/query"


class PipAuditBackend(AuditBackend):
    def __init__(self, osv_url: str = DEFAULT_OSV_URL, timeout: int = 15) -> None:
        self.osv_url = osv_url
        self.timeout = timeout

    def audit(self, packages: list[Package]) -> AuditResult:
        import requests
        from packaging.version import InvalidVersion, Version
        from pip_audit._service.interface import (
            ConnectionError as PAConnectionError,
        )
        from pip_audit._service.interface import (
            ResolvedDependency,
            ServiceError,
        )
        from pip_audit._service.osv import OsvService

        service = OsvService(cache_dir=None, timeout=self.timeout, osv_url=self.osv_url)
        audited, findings, skipped = [], [], []
        for pkg in packages:
            try:
                version = Version(pkg.version)
            except InvalidVersion:
                skipped.append((pkg, "version is not PEP 440; pip-audit cannot query it"))
                continue
            try:
                _, results = service.query(ResolvedDependency(name=pkg.name, version=version))
            except (PAConnectionError, ServiceError, requests.RequestException, ValueError) as exc:
                cause = exc.__cause__ or exc
                why = (str(cause).splitlines() or [""])[0][:160]
                raise ServiceUnreachable(
                    f"vulnerability service {self.osv_url} unreachable "
                    f"({type(cause).__name__}: {why}); NOTHING was audited "
                    f"({len(packages)} packages not audited). "
                    "Use --osv-db DIR for an offline audit."
                ) from None
            audited.append(pkg)
            for r in results:
                findings.append(
                    Finding(
                        pkg,
                        str(r.id),
                        tuple(sorted(str(a) for a in r.aliases)),
                        r.description[:200],
                        tuple(sorted(str(v) for v in r.fix_versions)),
                    )
                )
        findings.sort(key=lambda f: (f.package.name, f.id))
        return AuditResult(
            backend=f"pip-audit osv {self.osv_url}",
            audited=tuple(audited),
            findings=tuple(findings),
            skipped=tuple(skipped),
            database={"service": self.osv_url},
        )
