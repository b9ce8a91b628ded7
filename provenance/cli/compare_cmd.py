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
    if result.one_run:
        render_changes(f"imported by one run only (that version installed on both sides, "
                       f"unedited): {len(result.one_run)}", result.one_run, con)
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
    from provenance.cli.output import console, print_json
    from provenance.gate import compare_runs
    from provenance.store import open_store

    c = compare_runs(open_store(), a, b, list(vary))
    result, ra, rb, config = c.result, c.a, c.b, c.config
    doc = c.to_json()
    if as_json:
        print_json(doc)
        raise typer.Exit(0 if result.ok else REFUSED)
    con = console()
    if result.ok:
        _render(result, ra, rb, con)
        verdict = "identical identity" if result.identical else "comparable"
        con.print(f"[green]{verdict}[/green]: recorded as comparison {doc['record']}")
        if ra.run is not None and rb.run is not None:  # worker runs: top-1 along the context
            from provenance.report import runs_sparkline

            line = runs_sparkline(ra.run.record.to_doc(), rb.run.record.to_doc())
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

    for preset, keys in suggest_presets(config.presets, [c.key for c in result.refused]).items():
        err.print(f"covered by --vary {preset}: {', '.join(keys)}", markup=False,
                  highlight=False)
    err.print(
        "[red]refused[/red]: these runs were not done in the same environment. "
        "Declare what you meant to vary with --vary KEY or a preset "
        f"({', '.join(sorted(config.presets))})."
    )
    raise typer.Exit(REFUSED)
