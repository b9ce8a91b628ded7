"""`prov compare A B [--vary KEY_OR_PRESET ...]`: the gate that refuses incomparable runs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from provenance.cli import app
from provenance.model import join_key, split_key

if TYPE_CHECKING:  # imported inside the command so `prov --help` stays fast
    from provenance.gate import Comparison

REFUSED = 3


def render_changes(title: str, changes, con) -> None:
    from provenance.cli.output import change_table

    change_table(title, changes, con)


STATE_WORDS = {"identical": "identical", "differs": "differs", "missing_a": "missing in A",
               "missing_b": "missing in B", "missing": "missing in both"}
SIDE_WORDS = {"file": "a manifest file", "manifest": "a stored manifest"}


def _plain(con, text: str) -> None:
    con.print(text, markup=False, highlight=False)


def _render_follows(follows: dict[str, str], con) -> None:
    """`  following from python.packages.numpy: code.modules.numpy, runtime.libs (19)`: what
    a spec covers beyond its patterns, by where it is (every key is in the table above)."""
    by_source: dict[str, dict[str, list[str]]] = {}
    for derived, source in follows.items():
        head = join_key(split_key(derived)[:-1])  # code.modules, runtime.libs, libs
        by_source.setdefault(source, {}).setdefault(head, []).append(derived)
    for source, heads in by_source.items():
        parts = [found[0] if len(found) == 1 else f"{head} ({len(found)})"
                 for head, found in heads.items()]
        _plain(con, f"  following from {source}: {', '.join(parts)}")


def render_outputs(c, con) -> None:
    """Each declared output identical, differing or missing: information, never refusing."""
    if c.outputs is None:
        side = c.a if c.a.run is None else c.b
        name = "A" if side is c.a else "B"
        _plain(con, f"outputs: not compared ({name} is {SIDE_WORDS.get(side.kind, side.kind)},"
                    " not a run)")
        return
    if not c.outputs:
        return
    from provenance.gate import counts

    summary = ", ".join(f"{n} {STATE_WORDS[s]}" for s, n in counts(c.outputs).items())
    _plain(con, f"outputs: {summary}")
    for o in c.outputs:
        _plain(con, f"  {_output_line(o)}")


def _output_line(o) -> str:
    """`r.txt: differs (A sha256:.., B sha256:..)`; a paired output names both names."""
    name = o.name if o.b_name is None else f"{o.name} (B: {o.b_name})"
    doc = o.to_json()
    if o.state == "identical":
        return f"{name}: identical ({doc['a']})"
    seen = ", ".join(f"{side.upper()} {doc[side]}" for side in ("a", "b") if doc[side])
    return f"{name}: {STATE_WORDS[o.state]}" + (f" ({seen})" if seen else "")


def render_exchanges(c, con) -> None:
    """Two bound client runs' exchanges: matched, identical, the first differing token,
    top-1 agreement where logprobs came back (information, never refusing)."""
    if c.exchanges is None:
        return
    doc = c.exchanges.to_json()
    line = (f"exchanges: {doc['matched']} matched ({doc['identical']} identical, "
            f"{doc['differing']} differing)")
    if doc["unmatched_a"] or doc["unmatched_b"]:
        line += f", unmatched A {doc['unmatched_a']}, B {doc['unmatched_b']}"
    lp = doc["logprobs"]
    if lp["compared"]:
        line += f"; logprobs identical in {lp['identical']} of {lp['compared']}"
    top1 = doc["top1"]
    if top1["positions"]:
        line += (f"; top-1 agreement {top1['agree']}/{top1['positions']} "
                 f"({100 * top1['ratio']:.1f}%)")
    prompt = doc.get("prompt_top1") or {}
    if prompt.get("positions"):
        line += (f"; prompt top-1 agreement {prompt['agree']}/{prompt['positions']} "
                 f"({100 * prompt['ratio']:.1f}%)")
    _plain(con, line)
    for d in doc["differences"]:
        _plain(con, f"  {d['path']} (A #{d['a_seq']}, B #{d['b_seq']}): "
                    f"{_difference(d['first_difference'])}")


def _difference(diff: dict | None) -> str:
    if not diff:
        return "differs"
    if "position" in diff:
        if diff["position"] < 0:
            return f"choice {diff['choice']}: same tokens, other text"
        return (f"choice {diff['choice']}: first differing token at {diff['position']}: "
                f"A {diff['a']!r}, B {diff['b']!r}")
    name, (a, b) = next(iter(diff.items()))
    return f"{name}: A {a}, B {b}"


UNFINISHED_WORDS = {
    "abandoned": "abandoned: its prov was killed before the run ended; its record holds what "
                 "the run left (probe facts, logs), not its exit status, libraries or drift",
    "running": "still running: its facts so far",
    "serving": "still serving: its live facts (the engine's, since it became ready)",
}


def _render(c, con) -> None:
    result, a, b = c.result, c.a, c.b
    con.print(f"A: {a.kind} {a.ref}  identity {result.diff.digest_a}")
    con.print(f"B: {b.kind} {b.ref}  identity {result.diff.digest_b}")
    for side, state in c.unfinished.items():
        run = (a if side == "a" else b).run
        _plain(con, f"note: {side.upper()} (run {run.run_id[:12]}) is {UNFINISHED_WORDS[state]}")
    for spec, changes in result.varied.items():
        if changes:
            render_changes(f"varied by --vary {spec}: {len(changes)} key(s)", changes, con)
            _render_follows(result.follows.get(spec, {}), con)
    if result.ignored:
        render_changes(f"ignored (always-ignored keys): {len(result.ignored)}", result.ignored, con)
    if result.not_loaded:
        render_changes(f"not loaded (no process of either run imported them): "
                       f"{len(result.not_loaded)}", result.not_loaded, con)
    if result.one_side:
        render_changes(f"one side only (a library one run mapped is no difference): "
                       f"{len(result.one_side)}", result.one_side, con)
    if result.one_run:
        render_changes(f"imported by one run only (that version installed on both sides, "
                       f"unedited): {len(result.one_run)}", result.one_run, con)
    if result.env_one_run:
        render_changes(f"read by one run only (set to one value in both environments): "
                       f"{len(result.env_one_run)}", result.env_one_run, con)
    for spec in result.unused:
        con.print(f"[yellow]note[/yellow]: --vary {spec} covers no difference")
    render_outputs(c, con)
    render_exchanges(c, con)


@app.command()
def compare(
    a: str = typer.Argument(..., help="Run id (prefix), stored manifest digest, or file."),
    b: str = typer.Argument(..., help="Run id (prefix), stored manifest digest, or file."),
    vary: list[str] = typer.Option(
        [],
        "--vary",
        "-V",
        # the built-in presets as PRESETS names them (tests/test_docs_presets.py checks;
        # written out so that `prov --help` does not import the gate)
        help="A key, key pattern or preset (attention-backend, batch-invariance, command, "
        "dtype, inputs, kv-cache-dtype, model-runner, quantization, scheduler, threads, "
        "weights) that may differ; it also covers what follows from it "
        "(python.packages.NAME: the package's modules and libraries). Repeatable.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
    policy: Path = typer.Option(None, "--policy", help="Acceptance policy (TOML [[check]] "
                                "tables) on the statistics of the --json document; the exit "
                                "status is its verdict: PASS 0, FAIL 1, NOT_COMPARABLE 3 "
                                "(refused), NOT_EVALUATED 5."),
) -> None:
    """Compare two runs: refuse (exit 3) unless every identity difference is declared.

    A comparison that passes is recorded in the store with the keys that varied. Beside the
    verdict, each declared output is stated identical, differing or missing on a side.
    """
    from provenance.cli.gating import read_policy
    from provenance.cli.output import print_json
    from provenance.gate import compare_runs
    from provenance.model.policy import policy_exit
    from provenance.store import open_store

    pol = read_policy(policy)
    c = compare_runs(open_store(), a, b, list(vary))
    result = c.result
    doc = c.to_json()
    block = None
    if pol is not None:
        block = pol.evaluate(doc) if result.ok else pol.not_comparable("the gate refused")
    if as_json:
        print_json({**doc, **({"policy": block} if block else {})})
        raise typer.Exit(policy_exit(block, 0 if result.ok else REFUSED))
    if result.ok:
        _print_passed(c, doc["record"], block)
        raise typer.Exit(policy_exit(block))
    _print_refused(c, block)
    raise typer.Exit(REFUSED)


def _print_passed(c: Comparison, record: str, block: dict | None) -> None:
    """The comparison that passed, the record it was kept as, and the policy's verdict."""
    from provenance.cli.gating import render_policy
    from provenance.cli.output import console

    con = console()
    _render(c, con)
    verdict = "identical identity" if c.result.identical else "comparable"
    con.print(f"[green]{verdict}[/green]: recorded as comparison {record}")
    if c.a.run is not None and c.b.run is not None:  # worker runs: top-1 along the context
        from provenance.report import runs_sparkline

        line = runs_sparkline(c.a.run.record.to_doc(), c.b.run.record.to_doc())
        if line:
            con.print(line, markup=False, highlight=False)
    if block:
        render_policy(block, con)


def _print_refused(c: Comparison, block: dict | None) -> None:
    """On stderr: the refused keys, the presets that would cover them, and the way out."""
    from provenance.cli.gating import render_policy
    from provenance.cli.output import console
    from provenance.gate import suggest_presets

    result, config = c.result, c.config
    err = console(stderr=True)
    _render(c, err)
    render_changes(
        f"REFUSED: {len(result.refused)} identity key(s) differ and no --vary covers them",
        result.refused,
        err,
    )
    refused = [ch.key for ch in result.refused]
    for preset, keys in suggest_presets(config.presets, refused, result.context).items():
        _plain(err, f"covered by --vary {preset}: {', '.join(keys)}")
    err.print(
        "[red]refused[/red]: these runs were not done in the same environment. "
        "Declare what you meant to vary with --vary KEY or a preset "
        f"({', '.join(sorted(config.presets))})."
    )
    if block:
        render_policy(block, err)
