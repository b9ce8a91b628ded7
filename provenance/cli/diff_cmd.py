"""`prov diff A B`: what differs between two manifests, identity first."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from provenance.cli import app

if TYPE_CHECKING:  # imported inside the command so `prov --help` stays fast
    from provenance.model.diff import Change, ManifestDiff


def render_changes(title: str, changes: list[Change], con) -> None:
    from provenance.cli.output import change_table

    change_table(title, changes, con)


def render_diff(d: ManifestDiff, con) -> None:
    from provenance.model import LeafKind

    identity = d.of_kind(LeafKind.IDENTITY)
    context = d.of_kind(LeafKind.CONTEXT)
    if d.identical:
        con.print(f"[green]identical identity[/green] {d.digest_a}")
    else:
        con.print(f"[red]identity differs[/red]: {d.digest_a} vs {d.digest_b}")
        con.print(f"sections that differ: {', '.join(d.changed_sections())}")
        render_changes(f"identity: {len(identity)} differing keys", identity, con)
    if context:
        render_changes(
            f"context: {len(context)} differing keys (never blocks a comparison)", context, con
        )
    redacted = d.of_kind(LeafKind.REDACTED)
    if redacted:
        con.print(
            f"redacted: {len(redacted)} secret(s) present on one side only: "
            + ", ".join(c.key for c in redacted)
        )


@app.command()
def diff(
    a: str = typer.Argument(..., help="Manifest file (TOML or JSON)."),
    b: str = typer.Argument(..., help="Manifest file (TOML or JSON)."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Show what differs between two manifests. Exit 0: same identity; 1: differs; 2: bad input."""
    from provenance.cli.output import console, print_json
    from provenance.model.diff import diff_manifests
    from provenance.store import load_manifest

    d = diff_manifests(load_manifest(a), load_manifest(b))
    if as_json:
        print_json(d.to_json())
    else:
        render_diff(d, console())
    raise typer.Exit(0 if d.identical else 1)
