"""`prov exec [--name N] [--output PATH ...] [--tag K=V ...] -- CMD ARGS...`: a recorded run;
`prov serve --upstream URL`: the recording front (provenance/serve), a recorded run too."""

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
    server: str = typer.Option(
        None, "--server", help="URL of a server run on another machine (its prov identity at "
        "URL/prov/v1/identity) to bind the run to; one on this machine needs no option."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No summary line on stderr."),
    as_json: bool = typer.Option(
        False, "--json", help="Stdout is one JSON run summary, printed after CMD finished; "
        "CMD's own stdout goes to stderr (and to the store: prov show RUN --cat stdout)."
    ),
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
    tags, params = parse_pairs(tag, "--tag"), parse_pairs(param, "--param")
    with _stdout_to_stderr(as_json):  # `prov exec --json -- CMD | jq` reads only the summary
        # a store that cannot take the run does not stop the command (exec/unrecorded.py)
        result = run_supervised(command, name=name, outputs=output, tags=tags, params=params,
                                server=server, unrecorded_ok=True)
    _report(result, as_json, quiet)


@app.command("serve")
def serve(
    upstream: str = typer.Option(..., "--upstream", help="The server to record, e.g. "
                                 "http://127.0.0.1:8080 (llama.cpp, SGLang, a remote one)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Where the front listens."),
    port: int = typer.Option(0, "--port", help="The front's port (0: a free one, printed)."),
    name: str = typer.Option(None, "--name", "-n", help="A name for the front's run."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No summary line on stderr."),
    as_json: bool = typer.Option(
        False, "--json", help="Stdout is one JSON run summary, printed after the front stopped."),
) -> None:
    """Record every exchange with a server prov cannot probe, as a server run.

    Clients talk to the front instead of the server: under `prov exec` on this machine
    each is bound to the front's run, as to a probed server. The run records what the
    server says of itself (/version, /v1/models, /inference/v1/config, /server_info,
    /get_server_info, /props). Stops on ^C or SIGTERM; exits with the front's status.
    """
    from provenance.exec import run_supervised

    if not upstream.startswith(("http://", "https://")):
        raise ProvError(f"--upstream must be an http(s) URL, got {upstream!r}")
    if not 0 <= port <= 65535:
        raise ProvError(f"--port must be 0-65535, got {port}")
    argv = [sys.executable, "-m", "provenance.serve.front", "--upstream", upstream,
            "--host", host, "--port", str(port)]
    with _stdout_to_stderr(as_json):
        result = run_supervised(argv, name=name or "prov-serve", tags={"kind": "front"})
    _report(result, as_json, quiet)


def _report(result, as_json: bool, quiet: bool) -> None:
    """The run's summary (JSON on stdout, or one line on stderr); exits with its status."""
    if as_json:
        from provenance.cli.output import print_json

        print_json(_summary(result))
    elif result.record is None:
        pass  # unrecorded: exec/unrecorded.py said so on stderr, before and after
    elif not quiet:
        from provenance.cli.output import duration, seconds_between, state_text

        rec = result.record
        how = rec.error or state_text(rec.state, rec.exit_status, rec.signal)
        took = duration(seconds_between(rec.started_at, rec.ended_at))
        from provenance.model.text import escape_surrogates

        sys.stderr.write(escape_surrogates(f"prov: run {result.run_id} {how} in {took}\n"))
    raise typer.Exit(result.exit_status)


def _summary(result) -> dict:
    rec = result.record
    if rec is None:  # the store could not take the run; the command ran
        return {"run_id": None, "state": result.state, "exit_status": result.exit_status,
                "error": result.error, "record": None}
    return {"run_id": result.run_id, "state": result.state, "exit_status": result.exit_status,
            "signal": rec.signal, "error": rec.error, "started_at": rec.started_at,
            "ended_at": rec.ended_at, "record": result.record_digest,
            "manifest_digest": rec.manifest_digest, "outputs": rec.outputs,
            "warnings": rec.warnings or []}


class _stdout_to_stderr:
    """While active, file descriptor 1 is stderr (the command's streamed stdout lands there)."""

    def __init__(self, active: bool) -> None:
        self.active, self.saved = active, None

    def __enter__(self):
        if self.active:
            import os

            sys.stdout.flush()
            self.saved = os.dup(1)
            os.dup2(2, 1)
        return self

    def __exit__(self, *exc) -> None:
        if self.saved is not None:
            import os

            sys.stdout.flush()
            os.dup2(self.saved, 1)
            os.close(self.saved)
