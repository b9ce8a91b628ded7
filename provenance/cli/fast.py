"""`prov snapshot` straight from the console script, before typer is imported.

Importing typer (and its vendored click) is ~90 ms of a warm `prov snapshot` that otherwise
takes ~150 ms. `provenance/cli/__init__.py` calls `dispatch(sys.argv)` before it imports
typer; for `prov snapshot` with options this parser reads exactly as click would, the
command runs here and the process exits. Anything else (`--help`, an unknown or malformed
option, another command) returns, and typer parses as usual, so a user sees one behaviour.
`tests/provenance/cli/test_fast_snapshot.py` holds the two parsers to the same options.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

# option -> (parameter of run_snapshot, takes a value)
OPTIONS: dict[str, tuple[str, bool]] = {
    "--out": ("out", True), "-o": ("out", True),
    "--format": ("fmt", True), "-f": ("fmt", True),
    "--json": ("as_json", False),
    "--python": ("python", True),
    "--verify-files": ("verify_files", False),
    "--image": ("image", True),
}
LONG = {param: name for name, (param, _) in OPTIONS.items() if name.startswith("--")}
DEFAULTS: dict[str, object] = {
    "out": None, "fmt": "toml", "as_json": False, "python": None, "verify_files": False,
    "image": None,
}


def parse(args: list[str]) -> dict[str, object] | None:
    """run_snapshot's arguments from `args` (after `snapshot`), or None: let typer parse."""
    values = dict(DEFAULTS)
    given: set[str] = set()
    i = 0
    while i < len(args):
        name, eq, inline = args[i].partition("=")
        spec = OPTIONS.get(name if eq and name.startswith("--") else args[i])
        if spec is None:
            return None  # --help, a positional, -oFILE, a typo: click's rules and messages
        param, takes_value = spec
        given.add(LONG[param])
        if not takes_value:
            if eq and name.startswith("--"):
                return None
            values[param] = True
        elif eq and name.startswith("--"):
            values[param] = inline
        elif i + 1 < len(args) and not args[i + 1].startswith("-"):
            i += 1
            values[param] = args[i]
        else:
            return None  # a missing value (or one that looks like an option): click decides
        i += 1
    from provenance.cli.option_checks import has_empty, refusal

    if refusal("snapshot", given) or has_empty(values):
        return None  # contradicting or empty options: typer's path refuses them
    if values["out"] is not None:
        values["out"] = Path(values["out"])
    return values


def dispatch(argv: list[str]) -> None:
    """Run `prov snapshot ...` here and exit, when the arguments are plain; else return."""
    if len(argv) < 2 or argv[1] != "snapshot" or os.path.basename(argv[0]) != "prov":
        return
    values = parse(argv[2:])
    if values is None:
        return
    _exit_now(_guarded(values, _start_collector(values)))


def _exit_now(code: int) -> None:
    """Exit without the interpreter's teardown (freeing every module and a snapshot's
    objects: ~8 ms of CPU, more wall time on a loaded machine, of a ~70 ms warm snapshot).
    Nothing is left to it: files are written through `with` blocks or write_atomic, and the
    store's index was closed by run_snapshot; only stdio may still hold buffered text."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`prov snapshot | head -1`)
            if code == 0:
                code = 120  # what Python itself exits with when the final flush fails
    os._exit(code)


def _start_collector(values: dict[str, object]):
    """For `--python PATH`, start the collector child now: its interpreter starts while prov
    imports the rest of itself (~40 ms overlapped). Only for an executable file; anything
    else is left to run_snapshot's checks and their one-line errors."""
    python = values["python"]
    if not isinstance(python, str) or values["image"] is not None:
        return None
    if os.sep not in python:
        import shutil

        python = shutil.which(python) or python
    if not (os.path.isfile(python) and os.access(python, os.X_OK)):
        return None
    from provenance.collectors import foreign

    verify = bool(values["verify_files"])
    # as snapshot_run.rehash_progress_wanted decides (provenance.cli.progress is not imported
    # this early): progress on a terminal's stderr, none with --json
    progress = verify and sys.stderr.isatty() and not values["as_json"]
    try:
        return foreign.start(python, verify, progress=progress)
    except OSError:
        return None  # run_snapshot meets the same failure and reports it


def _guarded(values: dict[str, object], started=None) -> int:
    """The snapshot command under the CLI's error rules (provenance/cli/failure.py)."""
    try:
        from provenance.cli.snapshot_run import run_snapshot

        run_snapshot(**values, started=started)
    except (Exception, KeyboardInterrupt) as exc:
        from provenance.cli.failure import failed

        return failed(exc)
    finally:
        if started is not None:
            from provenance.collectors import foreign

            foreign.stop(started)  # collected already, or the command failed first
    return 0
