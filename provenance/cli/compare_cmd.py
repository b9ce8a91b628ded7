"""`prov compare A B [--vary KEY_OR_PRESET ...]`: the gate that refuses incomparable runs."""

from __future__ import annotations

import typer

from provenance.cli import app

REFUSED = 3


def render_changes(title: str, changes, con) -> None:
    from provenance.cli.output import change_table

    change_table(title, changes, con)


def _render(result, a, b, con) -> None:
    con.print(f"A: {a.type} {a.ref}  identity {result.diff.digest_a}")
    con.print(f"B: {b.type} {b.ref}  identity {result.diff.digest_b}")
    for spec, changes in result.varied.items():
        if changes:
            render_changes(f"varied by --vary {spec}: {len(changes)} key(s)", changes, con)
    if result.ignored:
        render_changes(f"ignored (always-ignored keys): {len(result.ignored)}", result.ignored, con)
    if result.not_loaded:
        render_changes(f"not loaded (no process of either run imported them): "
                       f"{len(result.not_loaded)}", result.not_loaded, con)
    for spec in result.unused:
        con.print(f"[yellow]note[/yellow]: --vary {spec} covers no difference")


@app.command()
def compare(
    a: str = typer.Argument(..., help="Run id (prefix), stored manifest digest, or file."),
    b: str = typer.Argument(..., help="Run id (prefix), stored manifest digest, or file."),
    vary: list[str] = typer.Option(
        [],
        "--vary",
        "-V",
        help="A key, key pattern or preset (attention-backend, kv-cache-dtype, weights, dtype) "
        "that may differ. Repeatable.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Compare two runs: refuse (exit 3) unless every identity difference is declared.

    A comparison that passes is recorded in the store with the keys that varied.
    """
    from provenance import __version__
    from provenance.cli.output import console, print_json
    from provenance.gate import common_libraries, gate, load_config, with_loaded_libraries
    from provenance.resolve import resolve
    from provenance.store import open_store
    from provenance.store.records import now_iso

    store = open_store()
    ra, rb = resolve(a, store), resolve(b, store)
    ma, mb = ra.manifest, rb.manifest
    libs_compared = 0
    if ra.run is not None and rb.run is not None:
        la, lb = common_libraries(
            ra.run.record.get("loaded_libraries") or [], rb.run.record.get("loaded_libraries") or []
        )
        ma, mb = with_loaded_libraries(ma, la), with_loaded_libraries(mb, lb)
        libs_compared = len(la)
    config = load_config()
    result = gate(ma, mb, list(vary), config)
    doc = result.to_json()
    doc["loaded_libraries_compared"] = libs_compared
    if result.ok:
        for r in (ra, rb):  # a passing comparison points at stored manifests
            if r.object is None:
                r.object = store.put_manifest(r.manifest)
        record = {
            "a": ra.describe(),
            "b": rb.describe(),
            "vary": list(vary),
            "config": config.source,
            "created_at": now_iso(),
            "prov_version": __version__,
            **doc,
        }
        doc["record"] = store.put_comparison(record)
    if as_json:
        print_json(doc)
        raise typer.Exit(0 if result.ok else REFUSED)
    con = console()
    if result.ok:
        _render(result, ra, rb, con)
        verdict = "identical identity" if result.diff.identical else "comparable"
        con.print(f"[green]{verdict}[/green]: recorded as comparison {doc['record']}")
        if ra.run is not None and rb.run is not None:  # worker runs: top-1 along the context
            from provenance.report import runs_sparkline

            line = runs_sparkline(ra.run.record, rb.run.record)
            if line:
                con.print(line, markup=False, highlight=False)
        raise typer.Exit(0)
    err = console(stderr=True)
    _render(result, ra, rb, err)
    render_changes(
        f"REFUSED: {len(result.refused)} identity key(s) differ and no --vary covers them",
        result.refused,
        err,
    )
    from provenance.gate import suggest_presets

    for preset, keys in suggest_presets(config, result.refused).items():
        err.print(f"covered by --vary {preset}: {', '.join(keys)}", markup=False,
                  highlight=False)
    err.print(
        "[red]refused[/red]: these runs were not done in the same environment. "
        "Declare what you meant to vary with --vary KEY or a preset "
        f"({', '.join(sorted(config.presets))})."
    )
    raise typer.Exit(REFUSED)
