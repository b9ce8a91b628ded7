"""Online audit through pip-audit's own OSV client, the service layer its CLI uses.

pip-audit has no public Python API: its package exports only `__version__`, and every
module is underscore-private (`pip_audit._service`). Its CLI's JSON (`-f json`) is public
but does not cover what prov must say when the service fails: `pip-audit -r REQ -s osv
--osv-url URL -f json` against a port nobody listens on ends in an uncaught
`requests.ConnectionError` traceback (exit 1), from which the cause would be scraped. So
the private service layer is used here, in this one adapter (`_service_api`), only under
the pip-audit versions it was written and tested against (`PIP_AUDIT_VERSIONS`, the same
range pyproject.toml pins); any other version is refused in one line (exit 4).

The client is given `osv_url`, so it can talk to OSV itself or any OSV-compatible mirror
(tests run one on loopback). The first failure to reach the service stops the audit: every
package is then *not audited*, and the caller says so instead of "no vulnerabilities".
"""

from __future__ import annotations

from typing import Any

from provenance.audit.base import (
    AuditBackend,
    AuditResult,
    Finding,
    Package,
    ServiceUnreachable,
)
from provenance.model.errors import EXIT_UNAVAILABLE, ProvError

DEFAULT_OSV_URL = "https://api.osv.dev/v1/query"
# The pip-audit releases whose private service layer this adapter was tested against; keep
# pyproject.toml's pin the same. Widen it only after running tests/provenance/audit.
PIP_AUDIT_VERSIONS = ">=2.7,<2.11"


def supported(version: str) -> bool:
    from packaging.specifiers import SpecifierSet

    return SpecifierSet(PIP_AUDIT_VERSIONS).contains(version, prereleases=True)


def _service_api() -> Any:
    """pip-audit's `_service` package, after checking the installed version."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        installed = version("pip-audit")
    except PackageNotFoundError:
        raise ProvError("pip-audit is not installed; use --osv-db DIR for an offline audit",
                        EXIT_UNAVAILABLE) from None
    if not supported(installed):
        raise ProvError(f"pip-audit {installed} is not one prov's adapter was tested with "
                        f"({PIP_AUDIT_VERSIONS}; its service API is private); install "
                        f"pip-audit{PIP_AUDIT_VERSIONS} or use --osv-db DIR", EXIT_UNAVAILABLE)
    import pip_audit._service as service

    return service


class PipAuditBackend(AuditBackend):
    def __init__(self, osv_url: str = DEFAULT_OSV_URL, timeout: int = 15) -> None:
        self.osv_url = osv_url
        self.timeout = timeout

    def audit(self, packages: list[Package]) -> AuditResult:
        import requests
        from packaging.version import InvalidVersion, Version

        api = _service_api()
        service = api.OsvService(cache_dir=None, timeout=self.timeout, osv_url=self.osv_url)
        failures = (api.ConnectionError, api.ServiceError, requests.RequestException,
                    ValueError)
        audited, findings, skipped = [], [], []
        for pkg in packages:
            try:
                version = Version(pkg.version)
            except InvalidVersion:
                skipped.append((pkg, "version is not PEP 440; pip-audit cannot query it"))
                continue
            try:
                _, results = service.query(api.ResolvedDependency(name=pkg.name,
                                                                  version=version))
            except failures as exc:
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
