"""`prov store reindex`, `prov store fsck` and `prov store gc`."""

from __future__ import annotations

import sys

import typer

from provenance.cli import app
from provenance.model.errors import ProvError

store_app = typer.Typer(
    help="Maintain the run store (.prov/ or $PROV_STORE).", no_args_is_help=True
)
app.add_typer(store_app, name="store")


def _open():
    from provenance.store import open_store

    store = open_store()
    if not (store.root / "objects").is_dir():
        raise ProvError(f"no store at {store.root}")
    return store


@store_app.command()
def reindex() -> None:
    """Rebuild the SQLite index from the objects alone."""
    store = _open()
    result = store.reindex()
    if result.moved_aside:
        sys.stderr.write(f"prov: the index was damaged: moved aside to {result.moved_aside}\n")
    sys.stdout.write(
        f"reindexed {store.root}: {result.runs} runs, {result.manifests} manifests, "
        f"{result.comparisons} comparisons, {result.objects} objects\n"
    )
    if result.corrupt:
        sys.stderr.write(
            f"prov: {len(result.corrupt)} corrupt object(s) skipped (see `prov store fsck`)\n"
        )
        raise typer.Exit(1)


@store_app.command()
def fsck(as_json: bool = typer.Option(False, "--json", help="Machine-readable output.")) -> None:
    """Re-hash every object and check the index: exit 1 on anything corrupt or missing."""
    from provenance.cli.output import print_json

    store = _open()
    r = store.fsck()
    if as_json:
        print_json(r.to_json())
        raise typer.Exit(0 if r.ok else 1)
    out = sys.stdout
    out.write(f"checked {r.objects} objects in {store.root}\n")
    for d in r.corrupt:
        out.write(f"corrupt   {d}\n")
    for d, origin in r.missing:
        out.write(f"missing   {d}  (referenced by {origin})\n")
    for p in r.stray:
        out.write(f"stray     {p}  (not named by its digest)\n")
    for p in r.index_problems:
        out.write(f"index     {p}\n")
    for rid in r.unindexed_runs:
        out.write(f"unindexed run {rid}  (`prov store reindex` adds it)\n")
    for rid in r.stale_runs:
        out.write(f"stale     run {rid}: the index lags its newest record (`prov store reindex`)\n")
    if r.orphaned:
        out.write(
            f"orphaned  {len(r.orphaned)} object(s) no record refers to (left by killed runs)\n"
        )
    _write_leftovers(out, r.leftovers)
    states = ", ".join(f"{n} {s}" for s, n in sorted(r.runs.items())) or "none"
    out.write(f"runs: {states}\n")
    out.write("ok\n" if r.ok else "FAILED\n")
    raise typer.Exit(0 if r.ok else 1)


def _write_leftovers(out, left) -> None:
    for item in left.temp_files + left.run_dirs:
        out.write(f"leftover  {item.path}  {item.size} bytes  ({item.why}; `prov store gc`)\n")
    for item in left.kept:
        out.write(f"in use    {item.path}  {item.size} bytes  ({item.why})\n")


@store_app.command()
def gc(
    dry_run: bool = typer.Option(False, "--dry-run", "-n",
                                 help="List what would be removed; remove nothing."),
    objects: bool = typer.Option(False, "--objects",
                                 help="Also remove objects no record refers to."),
    grace: float = typer.Option(3600.0, "--grace", min=0.0, metavar="SECONDS",
                                help="Spare anything younger than this (default 1 hour)."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Remove what killed runs left: temp files, run directories, stale index rows.

    Like `git gc`, it acts by default and only on garbage older than the grace period;
    files a live process holds open and the directories of running runs are never touched.
    """
    from provenance.cli.output import print_json

    store = _open()
    r = store.gc(dry_run=dry_run, objects=objects, grace_s=grace)
    if as_json:
        print_json(r.to_json())
        return
    verb = "would remove" if dry_run else "removed"
    out = sys.stdout
    for item in r.leftovers.temp_files + r.leftovers.run_dirs + r.objects:
        out.write(f"{verb}  {item.path}  {item.size} bytes  ({item.why})\n")
    for rid in r.rows_refreshed:
        out.write(f"{'would refresh' if dry_run else 'refreshed'}  index row of run {rid}\n")
    for item in r.leftovers.kept:
        out.write(f"kept  {item.path}  ({item.why})\n")
    out.write(f"{verb} {r.freed} bytes in {store.root}\n")
