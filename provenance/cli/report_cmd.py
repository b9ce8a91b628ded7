"""`prov report RUN|COMPARISON|SWEEP [--out report.html]`: a self-contained offline page."""

from __future__ import annotations

from pathlib import Path

import typer

from provenance.cli import app


@app.command()
def report(
    target: str = typer.Argument(..., help="A prov-result/1 directory (repeat, diverge, "
                                 "invariance), a sweep record (JSON or directory with "
                                 "sweep.json), or a stored comparison digest or run id (prefix)."),
    out: Path = typer.Option(Path("report.html"), "--out", "-o", help="HTML file to write."),
    store: str = typer.Option(None, "--store", help="Store to read (default: PROV_STORE, "
                              ".prov/ at the git root, or the demo's store beside a result)."),
    model: Path = typer.Option(None, "--model", help="Model directory whose tokenizer decodes "
                               "the text (default: the one the reference run was given)."),
    sbom: Path = typer.Option(None, "--sbom", help="CycloneDX JSON from `prov sbom`."),
    audit: Path = typer.Option(None, "--audit", help="JSON from `prov audit --json`."),
) -> None:
    """Write one HTML file that works offline: plots, highlighted text, diff, card."""
    from provenance.report import write_report

    path = write_report(target, out, store=store, model=model, sbom=sbom, audit=audit)
    size = path.stat().st_size
    typer.echo(f"wrote {path} ({size / 1e6:.2f} MB)")
