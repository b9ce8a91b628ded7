"""`prov lock`: a PEP 751 pylock.toml for an environment; and the environment half of
`prov verify --lock` (the image half lives in `provenance.cli.verify_image`)."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from provenance.cli import app
from provenance.model.errors import ProvError

DEFAULT_INDEX = "https://pypi.org/simple"


def source_manifest(
    manifest: str | None,
    image: str | None,
    run: str | None,
    verify_files: bool,
    python: str | None = None,
):
    """The manifest to lock or verify: a file, a run, an image, or a live environment
    (the one source resolver, `provenance.sbom.resolve_subject`), with Python packages."""
    from lockfiles import require_python
    from provenance.sbom import resolve_subject

    subject = resolve_subject(image=image, run=run, manifest=manifest, python=python,
                              verify_files=verify_files)
    require_python(subject.manifest, subject.label)
    return subject.manifest


@app.command()
def lock(
    manifest: str = typer.Option(None, "--manifest", help="Lock the packages of this manifest."),
    image: str = typer.Option(None, "--image", help="Lock the Python packages of an image SOURCE."),
    run: str = typer.Option(None, "--run", help="Lock the environment of a recorded run."),
    python: str = typer.Option(None, "--python", help="Lock another interpreter's environment."),
    out: Path = typer.Option(Path("pylock.toml"), "--out", "-o", help="Where to write the lock."),
    index_url: str = typer.Option(
        DEFAULT_INDEX, "--index-url", help="Simple index asked for each package's file."),
    extra_index_url: list[str] = typer.Option(
        None, "--extra-index-url", metavar="URL",
        help="Another simple index, asked after --index-url."),
    find_links: list[Path] = typer.Option(
        None, "--find-links",
        help="A wheel directory, asked after the indexes; a file there is locked only if "
             "installing it gives the installed files."),
    offline: bool = typer.Option(False, "--offline", help="Ask no index; local sources only."),
    allow_missing: bool = typer.Option(
        False, "--allow-missing-hashes", help="Write even if some artifact hashes are unknown."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print what was written as JSON."),
) -> None:
    """Write a PEP 751 pylock.toml (with prov's facts under [tool.prov])."""
    from lockfiles import write_pylock

    if not (out.parent if str(out.parent) else Path(".")).is_dir():
        raise ProvError(f"{out.parent}: directory does not exist")
    name = out.name
    if not (name == "pylock.toml" or (name.startswith("pylock.") and name.endswith(".toml"))):
        raise ProvError(f"{name}: PEP 751 requires the name pylock.toml or pylock.NAME.toml")
    m = source_manifest(manifest, image, run, verify_files=False, python=python)
    indexes = [] if offline else [index_url, *(extra_index_url or [])]
    from provenance.cli.progress import counter

    with counter("looking up artifact hashes:") as step:
        sources, asked = _sources(indexes, list(find_links or []), step)
        result = write_pylock(m, sources, out.resolve().parent)
    if result.missing_hashes and not allow_missing:
        raise ProvError(_missing_message(result.missing_hashes, asked, offline))
    from provenance.model.atomic import write_atomic

    write_atomic(out, result.text)
    if as_json:
        from provenance.cli.output import print_json

        print_json({"lock": str(out), "packages": result.packages, "sources": result.sources,
                    "missing_hashes": list(result.missing_hashes),
                    "complete": not result.missing_hashes})
        return
    sources_text = ", ".join(f"{n} from {k}" for k, n in sorted(result.sources.items()))
    print(f"locked {result.packages} packages to {out} ({sources_text})")
    if result.missing_hashes:
        print(
            f"incomplete: no artifact hash for {', '.join(result.missing_hashes)}", file=sys.stderr
        )


def _sources(indexes: list[str], find_links: list[Path], step):
    """The lock's artifact sources, and the indexes (to say which were unreachable)."""
    from containers.catalogers import content_fingerprint
    from lockfiles import LocalWheels, SimpleIndex, Sources

    asked = [SimpleIndex(url) for url in indexes]
    local = LocalWheels(find_links, content_fingerprint) if find_links else None
    sources = Sources(indexes=[index.find for index in asked],
                      local=[local.find] if local else [], fingerprint=content_fingerprint,
                      on_package=step)
    return sources, asked


def _missing_message(missing: list[str], asked, offline: bool) -> str:
    down = [index.unreachable for index in asked if index.unreachable]
    why = f" (index unreachable: {'; '.join(down)})" if down else ""
    name = ("--offline asks no index: name their wheel directory (--find-links)" if offline
            else "name the index they came from (--extra-index-url) or their wheel "
                 "directory (--find-links)")
    return (
        f"{len(missing)} package(s) have no known artifact{why}: {', '.join(missing[:8])}; "
        f"{name}, or --allow-missing-hashes writes an incomplete lock that says so"
    )


def verify_environment_command(
    lock_path: Path, source: str | None, as_json: bool, python: str | None = None,
    exact: bool = False,
) -> int:
    """Exit 0 when the environment (or image SOURCE) matches the lock, 1 when it does not;
    with `exact`, an installed package the lock does not name is a mismatch whatever the
    lock's kind."""
    from lockfiles import read_lock, verify_environment

    lock_doc = read_lock(lock_path)
    manifest = source_manifest(None, source, None, verify_files=source is None, python=python)
    report = verify_environment(lock_doc, manifest, exact=True if exact else None)
    if as_json:
        from provenance.cli.output import print_json

        print_json(report.to_json())
        return 0 if report.ok else 1
    from provenance.cli.output import console

    con = console()
    if report.ignored:
        con.print(f"not in the lock, ignored as installer tooling: {', '.join(report.ignored)}")
    if report.extras:
        names = ", ".join(f"{e.package} {e.installed}" for e in report.extras)
        con.print(f"{len(report.extras)} installed package(s) not named by {lock_path.name}, "
                  f"not checked (a {lock_doc.kind} file constrains only what it names; "
                  f"--exact fails on them): {names}", markup=False)
    if report.ok:
        con.print(f"[green]ok[/green]: {report.checked} locked packages match ({report.lock_kind})")
        return 0
    from rich.table import Table

    table = Table(
        title=f"{len(report.mismatches)} mismatch(es) against {lock_path}", title_justify="left"
    )
    for col in ("package", "problem", "locked", "installed"):
        table.add_column(col, overflow="fold")
    for m in report.mismatches:
        table.add_row(m.package, m.problem, m.locked, m.installed)
    con.print(table)
    return 1
