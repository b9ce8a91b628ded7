"""`prov sbom`: a CycloneDX 1.6 SBOM for this environment, a manifest, an image or a run."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

import typer

from provenance.cli import app


@app.command()
def sbom(
    image: str = typer.Option(None, "--image", help="An image SOURCE (read without running it)."),
    run: str = typer.Option(None, "--run", help="A run id from the store."),
    manifest: Path = typer.Option(None, "--manifest", help="A manifest file (prov snapshot -o)."),
    fmt: str = typer.Option("cyclonedx-json", "--format", help="cyclonedx-json or cyclonedx-xml."),
    out: Path = typer.Option(None, "--out", "-o", help="Write here (default: stdout)."),
    timestamp: bool = typer.Option(
        False, "--timestamp", help="Add the wall-clock time (the output is no longer reproducible)."
    ),
) -> None:
    """Write a validated CycloneDX 1.6 SBOM; without a source, for this Python environment."""
    from provenance.cli.image_scan import scan_with_progress
    from provenance.sbom import build_bom, render, resolve_subject

    subject = resolve_subject(image=image, run=run, manifest=manifest,
                              scan=scan_with_progress)
    when = datetime.now(UTC).replace(microsecond=0) if timestamp else None
    text = render(build_bom(subject, timestamp=when), fmt)
    if out is None:
        sys.stdout.write(text)
        return
    from provenance.model.atomic import write_atomic

    write_atomic(out, text)
    print(f"wrote {out} ({fmt}, {subject.kind}: {subject.label})", file=sys.stderr)
