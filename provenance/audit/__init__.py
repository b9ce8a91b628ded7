"""`prov audit`: known vulnerabilities in a manifest's Python packages.

Backends: `osv_db` (offline, a local directory of OSV records) and `pip_audit_backend`
(pip-audit's OSV client against a service). `cyclonedx` turns results into SBOM
`vulnerabilities`.
"""

from provenance.audit.base import (
    EXIT_NOT_AUDITED,
    EXIT_VULNERABLE,
    AuditBackend,
    AuditResult,
    Finding,
    Package,
    ServiceUnreachable,
    packages_of,
)
from provenance.audit.cyclonedx import vulnerabilities
from provenance.audit.osv_db import OsvDbBackend
from provenance.audit.pip_audit_backend import DEFAULT_OSV_URL, PipAuditBackend

__all__ = [
    "DEFAULT_OSV_URL",
    "EXIT_NOT_AUDITED",
    "EXIT_VULNERABLE",
    "AuditBackend",
    "AuditResult",
    "Finding",
    "OsvDbBackend",
    "Package",
    "PipAuditBackend",
    "ServiceUnreachable",
    "packages_of",
    "vulnerabilities",
]
