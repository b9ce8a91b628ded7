"""`prov pin SOURCE`: pin an image to immutable digests in an image lock.

Also home of the shared image-scan helper (rich progress bar per layer, ImageError ->
ProvError) that `prov snapshot --image` uses.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import typer

from provenance.cli import app
from provenance.model.errors import ProvError

_PLATFORM = re.compile(r"[a-z0-9]+/[a-z0-9_]+(/[a-z0-9]+)?")  # OCI image-index platform


def scan_with_progress(
    source: str, quiet: bool = False, platform: str | None = None, verify_files: bool = False
) -> Any:
    """Scan an image with a rich progress bar per layer on stderr (ImageError is a ProvError:
    the CLI prints it once). `verify_files`: every file a package claims is re-hashed in the
    same pass (`prov pin`)."""
    from containers import scan_image

    if quiet or not sys.stderr.isatty():
        return scan_image(source, platform=platform, verify_files=verify_files)
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TransferSpeedColumn,
    )

    tasks: dict[int, Any] = {}
    with Progress(
        TextColumn("layer {task.fields[layer]:>3}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        transient=True,
        console=None,
    ) as bar:

        def progress(event: str, index: int, done: int, total: int | None) -> None:
            if event == "start":
                tasks[index] = bar.add_task("", layer=index, total=total)
            elif index in tasks:
                bar.update(tasks[index], completed=done)
                if event == "end":
                    bar.update(tasks[index], completed=total or done)

        return scan_image(
            source, progress=progress, platform=platform, verify_files=verify_files
        )


@app.command()
def pin(
    source: str = typer.Argument(
        ...,
        help="registry:HOST/REPO:TAG, docker-archive:PATH, oci:PATH, docker:REF or a bare REF.",
    ),
    out: Path = typer.Option(Path("image.lock.toml"), "--out", "-o", help="Lock file to write."),
    platform: str = typer.Option(None, "--platform", help="os/arch(/variant) in an index."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON summary on stdout."),
) -> None:
    """Pin an image: resolve its tag to digests and write an image lock with every package."""
    from importlib.metadata import version

    from lockfiles.image_lock import lock_from_facts
    from provenance.model.atomic import write_atomic

    if platform is not None and not _PLATFORM.fullmatch(platform):
        raise ProvError(f"--platform {platform!r}: expected os/arch or os/arch/variant "
                        "(linux/amd64, linux/arm64/v8)")
    scan = scan_with_progress(source, quiet=as_json, platform=platform, verify_files=True)
    facts = scan.facts()
    files = scan.file_checks()
    text = lock_from_facts(facts, created_by=f"prov {version('prov-llm')}", files=files)
    write_atomic(out, text)
    image = facts["image"]
    summary = {
        "lock": str(out),
        "source": source,
        "reference": image.get("reference"),
        "index_digest": image.get("index_digest"),
        "manifest_digest": image["manifest_digest"],
        "manifest_synthesized": image["manifest_synthesized"],
        "config_digest": image["config_digest"],
        "layers": len(image["layers"]),
        "packages": len(scan.packages()),
        "files": _files_summary(files or {}),
        "warnings": scan.warnings,
    }
    if as_json:
        from provenance.cli.output import print_json

        print_json(summary)
        return
    from provenance.cli.output import console

    con = console()
    for label in ("reference", "index_digest", "manifest_digest", "config_digest", "layers"):
        if summary.get(label) is not None:
            con.print(f"[bold]{label:>16}[/bold]  {summary[label]}")
    con.print(f"[bold]{'packages':>16}[/bold]  {summary['packages']}")
    f = summary["files"]
    con.print(
        f"[bold]{'files':>16}[/bold]  {f['checked']} checked, {f['modified']} modified, "
        f"{f['missing']} missing, {f['unclaimed']} unclaimed"
    )
    if image["manifest_synthesized"]:
        con.print(
            "[yellow]         warning[/yellow]  manifest synthesized by docker save: its digest "
            "is not the registry's; the config digest is the anchor"
        )
    for w in scan.warnings:
        con.print(f"[yellow]         warning[/yellow]  {w}")
    con.print(f"[bold]{'written':>16}[/bold]  {out}")


def _files_summary(files: dict[str, Any]) -> dict[str, int]:
    """Totals over the per-package file checks."""
    out = {"checked": sum(c.get("checked", 0) for c in files.values())}
    for kind in ("modified", "missing", "unclaimed"):
        out[kind] = sum(len(c.get(kind, [])) for c in files.values())
    return out
