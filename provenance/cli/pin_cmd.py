"""`prov pin SOURCE`: pin an image to immutable digests in an image lock.

Also home of the shared image-scan helper (rich progress bar per layer, ImageError ->
ProvError) that `prov snapshot --image` uses.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import typer

from provenance.cli import app
from provenance.cli.image_scan import scan_with_progress
from provenance.model.errors import ProvError

_PLATFORM = re.compile(r"[a-z0-9]+/[a-z0-9_]+(/[a-z0-9]+)?")  # OCI image-index platform


@app.command()
def pin(
    source: str = typer.Argument(
        ...,
        help="registry:HOST/REPO:TAG, docker-archive:PATH, oci:PATH, docker:REF or a bare REF.",
    ),
    out: Path = typer.Option(Path("image.lock.toml"), "--out", "-o", help="Lock file to write."),
    platform: str = typer.Option(None, "--platform", help="os/arch(/variant) in an index."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON summary on stdout."),
    all_files: bool = typer.Option(
        False, "--all-files",
        help="Also record every file no package lists (with its layer and digest), so that "
        "`prov verify --lock` reports a changed /etc/passwd too.",
    ),
) -> None:
    """Pin an image: resolve its tag to digests and write an image lock with every package
    and every file a package lists, re-hashed (with what was checked, skipped, unlisted)."""
    from importlib.metadata import version

    from lockfiles import image_lock
    from provenance.model.atomic import write_atomic

    if platform is not None and not _PLATFORM.fullmatch(platform):
        raise ProvError(f"--platform {platform!r}: expected os/arch or os/arch/variant "
                        "(linux/amd64, linux/arm64/v8)")
    scan = scan_with_progress(
        source, quiet=as_json, platform=platform, verify_files=True, all_files=all_files
    )
    facts = scan.facts()
    files = scan.file_checks()
    coverage = scan.coverage.as_dict() if scan.coverage is not None else None
    text = image_lock.lock_from_facts(
        facts, created_by=f"prov {version('prov-llm')}", files=files, coverage=coverage
    )
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
        "packages": len(image_lock.lock_packages(facts)),
        "files": _files_summary(files or {}),
        "coverage": coverage,
        "warnings": scan.warnings,
    }
    if as_json:
        from provenance.cli.output import print_json

        print_json(summary)
        return
    _print_summary(summary, files or {}, image["manifest_synthesized"], scan.warnings, out)


def _print_summary(summary: dict[str, Any], files: dict[str, Any], synthesized: bool,
                   warnings: list[str], out: Path) -> None:
    """The lock written, a labelled line each: digests, counts, findings and warnings."""
    from rich.markup import escape

    from provenance.cli.output import console

    con = console()
    for label in ("reference", "index_digest", "manifest_digest", "config_digest", "layers"):
        if summary.get(label) is not None:
            con.print(f"[bold]{label:>16}[/bold]  {escape(str(summary[label]))}")
    con.print(f"[bold]{'packages':>16}[/bold]  {summary['packages']}")
    con.print(f"[bold]{'files':>16}[/bold]  {_files_line(summary['files'])}")
    if summary["coverage"] is not None:
        con.print(f"[bold]{'coverage':>16}[/bold]  {_coverage_line(summary['coverage'])}")
    _print_findings(con, files)
    if synthesized:
        con.print(
            "[yellow]         warning[/yellow]  manifest synthesized by docker save: its digest "
            "is not the registry's; the config digest is the anchor"
        )
    for w in warnings:
        con.print(f"[yellow]         warning[/yellow]  {escape(w)}")  # image text: no markup
    con.print(f"[bold]{'written':>16}[/bold]  {escape(str(out))}")


def _files_summary(files: dict[str, Any]) -> dict[str, int]:
    """Totals over the per-package file checks: files checked, claims skipped (an algorithm
    not hashed), and each finding kind."""
    from containers import KINDS

    out = {k: sum(c.get(k, 0) for c in files.values()) for k in ("checked", "skipped")}
    for kind in KINDS:
        if kind != "unlisted":  # an inventory (--all-files), counted in the coverage
            out[kind] = sum(len(c.get(kind, [])) for c in files.values())
    return out


def _files_line(f: dict[str, int]) -> str:
    """Claims checked (a file two packages list counts twice) and each finding kind."""
    shown = [f"{f['checked']} claims checked"]
    shown += [f"{n} {k.replace('_', ' ')}" for k, n in f.items() if k != "checked" and n]
    return ", ".join(shown) if len(shown) > 1 else f"{shown[0]}, all intact"


def _coverage_line(c: dict[str, Any]) -> str:
    rules = ", ".join(f"{k} {n}" for k, n in c["skipped_by_rule"].items())
    line = (f"{c['files']} regular files: {c['checked']} checked, {c['skipped']} skipped by "
            f"rule{f' ({rules})' if rules else ''}, {c['unlisted']} unlisted")
    return line + (" (recorded: --all-files)" if c["all_files"] else "")


_SHOWN = 20  # findings printed; the lock holds them all


def _print_findings(con, files: dict[str, Any]) -> None:
    """One line per finding (package, path, kind and why), the first _SHOWN of them."""
    from rich.markup import escape

    from containers import KINDS
    from provenance.cli.verify_image import finding_text

    found = [
        (key, kind, issue)
        for key in sorted(files)
        for kind in KINDS
        if kind != "unlisted"
        for issue in files[key].get(kind, [])
    ]
    for key, kind, issue in found[:_SHOWN]:
        why = finding_text(kind, issue.get("layer"), issue.get("installed"), issue.get("other"))
        con.print(f"{'':>16}  [bold]{escape(key)}[/bold] {escape(issue['path'])}: {escape(why)}")
    if len(found) > _SHOWN:
        con.print(f"{'':>16}  ... and {len(found) - _SHOWN} more (all in the lock's "
                  "\\[files])")
