"""`prov snapshot`: collect the current environment's manifest (typer face of
`provenance.cli.snapshot_run`)."""

from __future__ import annotations

from pathlib import Path

import typer

from provenance.cli import app
from provenance.cli.snapshot_run import run_snapshot, summary_lines

__all__ = ["snapshot", "summary_lines"]


@app.command()
def snapshot(
    out: Path = typer.Option(None, "--out", "-o", help="Write the manifest to this file."),
    fmt: str = typer.Option("toml", "--format", "-f", help="File format for --out: toml or json."),
    as_json: bool = typer.Option(False, "--json", help="Print the manifest as JSON on stdout."),
    python: str = typer.Option(
        None, "--python", help="Inspect this interpreter instead of prov's own."
    ),
    verify_files: bool = typer.Option(
        False, "--verify-files", help="Re-hash every file listed in each RECORD; report edits."
    ),
    image: str = typer.Option(
        None,
        "--image",
        help="Snapshot a container image instead: docker-archive:PATH, oci:PATH, "
        "registry:HOST/REPO:TAG, docker:REF.",
    ),
) -> None:
    """Snapshot this environment: Python, OS packages, CPU, GPU, torch, engines, env vars."""
    run_snapshot(out, fmt, as_json, python, verify_files, image)
