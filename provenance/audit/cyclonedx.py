"""Audit findings as CycloneDX `vulnerabilities`, each affecting its component's bom-ref."""

from __future__ import annotations

from provenance.audit.base import AuditResult


def vulnerabilities(result: AuditResult) -> list:
    from cyclonedx.model.impact_analysis import ImpactAnalysisAffectedStatus
    from cyclonedx.model.vulnerability import (
        BomTarget,
        BomTargetVersionRange,
        Vulnerability,
        VulnerabilityReference,
        VulnerabilitySource,
    )
    from packageurl import PackageURL

    out = []
    for f in result.findings:
        ref = PackageURL(type="pypi", name=f.package.name, version=f.package.version).to_string()
        out.append(
            Vulnerability(
                bom_ref=f"vuln:{f.id}:{ref}",
                id=f.id,
                source=VulnerabilitySource(name=result.backend),
                references=[
                    VulnerabilityReference(id=a, source=VulnerabilitySource(name="alias"))
                    for a in f.aliases
                ],
                description=f.summary or None,
                recommendation=(
                    f"Upgrade {f.package.name} to {' or '.join(f.fix_versions)}"
                    if f.fix_versions else None
                ),
                affects=[
                    BomTarget(
                        ref=ref,
                        versions=[BomTargetVersionRange(
                            version=f.package.version,
                            status=ImpactAnalysisAffectedStatus.AFFECTED,
                        )],
                    )
                ],
            )
        )
    return out
