"""`prov exec [--name N] [--output PATH ...] [--tag K=V ...] -- CMD ARGS...`: a recorded run."""

from __future__ import annotations

import sys

import typer

from provenance.cli import app
from provenance.model.errors import ProvError


def parse_pairs(pairs: list[str], option: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in pairs:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ProvError(f"{option} expects KEY=VALUE, got {item!r}")
        out[key] = value
    return out


@app.command(
    "exec",
    context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True},
)
def exec_(
    command: list[str] = typer.Argument(None, help="The command and its arguments (after --)."),
    name: str = typer.Option(None, "--name", "-n", help="A name for the run."),
    output: list[str] = typer.Option(
        [], "--output", "-o", help="A file or directory the run produces (hashed at the end)."
    ),
    tag: list[str] = typer.Option([], "--tag", "-t", help="A KEY=VALUE label (repeatable)."),
    param: list[str] = typer.Option(
        [], "--param", "-p", help="A KEY=VALUE run parameter, recorded as run.params.KEY."
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No summary line on stderr."),
) -> None:
    """Run CMD as a recorded run: snapshot, git state, logs, loaded libraries, outputs.

    Exits with CMD's own status (128+N when signal N killed it).
    """
    from provenance.exec import run_supervised

    command = list(command or [])
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise ProvError("no command given (usage: prov exec [OPTIONS] -- CMD ARGS...)")
    result = run_supervised(
        command,
        name=name,
        outputs=output,
        tags=parse_pairs(tag, "--tag"),
        params=parse_pairs(param, "--param"),
    )
    if not quiet:
        from provenance.cli.output import duration, seconds_between, state_text

        rec = result.record
        how = rec.error or state_text(rec.state, rec.exit_status, rec.signal)
        took = duration(seconds_between(rec.started_at, rec.ended_at))
        sys.stderr.write(f"prov: run {result.run_id} {how} in {took}\n")
    raise typer.Exit(result.exit_status)
