"""`prov serve --upstream URL [--host H] [--port P] [--name N]`: a recording front."""

from __future__ import annotations

import sys

import typer

from provenance.cli import app
from provenance.model.errors import ProvError


@app.command("serve")
def serve(
    upstream: str = typer.Option(..., "--upstream", help="The server to record, e.g. "
                                 "http://127.0.0.1:8080 (llama.cpp, SGLang, a remote one)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Where the front listens."),
    port: int = typer.Option(0, "--port", help="The front's port (0: a free one, printed)."),
    name: str = typer.Option(None, "--name", "-n", help="A name for the front's run."),
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
    result = run_supervised(argv, name=name or "prov-serve", tags={"kind": "front"})
    raise typer.Exit(result.exit_status)
