"""`prov audit`: known vulnerabilities in a manifest's Python packages.

Backends: `osv_db` (offline, a local directory of OSV records) and `pip_audit_backend`
(pip-audit's OSV client against a service). `cyclonedx` turns results into SBOM
`vulnerabilities`.
"""

from provenance.audit.base import (
    AuditBackend,
    AuditResult,
    Finding,
    Package,
    ServiceUnreachable,
    packages_of,
)

__all__ = [
    "AuditBackend",
    "AuditResult",
    "Finding",
    "Package",
    "ServiceUnreachable",
    "packages_of",
]
