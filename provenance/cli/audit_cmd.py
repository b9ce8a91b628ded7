"""`prov audit`: pip-audit (or an offline OSV directory) over a manifest's Python packages."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from provenance.cli import app
from provenance.model.errors import ProvError


@app.command()
def audit(
    image: str = typer.Option(None, "--image", help="An image SOURCE (read without running it)."),
    run: str = typer.Option(None, "--run", help="A run id from the store."),
    manifest: Path = typer.Option(None, "--manifest", help="A manifest file (prov snapshot -o)."),
    osv_db: Path = typer.Option(
        None, "--osv-db", help="Offline: a directory of OSV advisory JSON records."
    ),
    osv_url: str = typer.Option(
        None, "--osv-url", help="An OSV-compatible query endpoint (default: OSV's own)."
    ),
    timeout: int = typer.Option(15, "--timeout", help="Seconds per service request."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
    sbom_out: Path = typer.Option(
        None, "--sbom-out", help="Also write a CycloneDX SBOM with the findings as vulnerabilities."
    ),
) -> None:
    """Audit Python packages for known vulnerabilities. Exit 1: vulnerable; 4: not audited."""
    from provenance.audit import EXIT_NOT_AUDITED, EXIT_VULNERABLE, packages_of
    from provenance.cli.image_scan import scan_with_progress
    from provenance.sbom import resolve_subject

    if osv_db is not None and osv_url is not None:
        raise ProvError("give --osv-db (offline) or --osv-url, not both")
    subject = resolve_subject(image=image, run=run, manifest=manifest,
                              scan=scan_with_progress)
    packages = packages_of(subject.manifest.facts)
    if not packages:
        raise ProvError(f"{subject.label}: the manifest lists no Python packages to audit")
    if osv_db is not None:
        from provenance.audit import OsvDbBackend

        backend = OsvDbBackend(osv_db)
    else:
        from provenance.audit import DEFAULT_OSV_URL, PipAuditBackend

        backend = PipAuditBackend(osv_url or DEFAULT_OSV_URL, timeout=timeout)
    from provenance.audit import ServiceUnreachable

    try:
        result = backend.audit(packages)
    except ServiceUnreachable as exc:
        if not as_json:
            raise  # one line on stderr, exit 4: nothing was audited
        print(f"prov: error: {exc}", file=sys.stderr)
        result = _not_audited(backend, packages, str(exc))

    if sbom_out is not None:
        _write_sbom(subject, result, sbom_out)
    if as_json:
        from provenance.cli.output import print_json

        print_json({"subject": f"{subject.kind}: {subject.label}", **result.to_json()})
    else:
        _print_table(result)
    if result.findings:
        raise typer.Exit(EXIT_VULNERABLE)
    if not result.audited:
        raise typer.Exit(EXIT_NOT_AUDITED)


def _not_audited(backend, packages, why: str):
    """The result `--json` prints when no service answered: every package skipped."""
    from provenance.audit import AuditResult

    name = f"pip-audit osv {backend.osv_url}" if hasattr(backend, "osv_url") else str(backend)
    return AuditResult(name, (), (), tuple((p, why) for p in packages))


def _print_table(result) -> None:
    from rich.table import Table

    from provenance.cli.output import console

    out = console()
    if result.findings:
        table = Table("package", "version", "advisory", "aliases", "fixed in", box=None)
        for f in result.findings:
            table.add_row(f.package.name, f.package.version, f.id, ", ".join(f.aliases),
                          ", ".join(f.fix_versions) or "-")
        out.print(table)
    db = result.database
    if "digest" in db:
        out.print(f"database {db['path']}: {db['records']} records, digest {db['digest']}, "
                  f"newest modified {db['newest_modified'] or 'unknown'}")
    vulnerable = len(result.vulnerable)
    out.print(
        f"{len(result.audited)} packages audited with {result.backend}: "
        + (f"{len(result.findings)} known vulnerabilities in {vulnerable} packages"
           if result.findings else "no known vulnerabilities")
    )
    if result.skipped:
        out.print(f"{len(result.skipped)} packages NOT audited:")
        for pkg, why in result.skipped:
            out.print(f"  {pkg.name} {pkg.version}: {why}")


def _write_sbom(subject, result, path: Path) -> None:
    from provenance.audit import vulnerabilities
    from provenance.model.atomic import write_atomic
    from provenance.sbom import build_bom, render

    extra = (result.database.get("digest") or result.database.get("service") or "",)
    built = build_bom(subject, vulnerabilities=vulnerabilities(result), serial_extra=extra)
    write_atomic(path, render(built))
    print(f"wrote {path} (CycloneDX 1.6 with {len(result.findings)} vulnerabilities)",
          file=sys.stderr)
