"""How a failed command ends: one line on stderr and the exit status of the error table.

`provenance.cli.run` hands every exception here (click's usage errors, typer.Exit, a
ProvError, a bug), so every error is worded once.
"""

from __future__ import annotations

import os
import sys

import typer

try:  # typer >= 0.27 vendors click; a separately installed click is not the one raising
    from typer._click import exceptions as click_exc
except ImportError:
    from click import exceptions as click_exc  # type: ignore[no-redef]

from provenance.model.errors import (
    EXIT_INTERNAL,
    EXIT_UNAVAILABLE,
    ProvError,
    one_line,
    os_error,
)


def error_line(message: str) -> None:
    print(f"prov: error: {one_line(message)}", file=sys.stderr)


def failed(exc: BaseException) -> int:
    """Print `exc` as one line; its exit status. click's usage errors are the user's (exit
    2), as is a ProvError and an OSError on a path they named (a name too long, a symlink
    loop); anything else is a bug in prov (exit 70), raised again under PROV_DEBUG=1 for its
    traceback."""
    code = _click_status(exc)
    if code is not None:
        return code
    debug = bool(os.environ.get("PROV_DEBUG"))
    if isinstance(exc, KeyboardInterrupt):
        print("prov: interrupted", file=sys.stderr)
        return 130
    if isinstance(exc, OSError) and not debug:
        exc = os_error(exc) or exc
    if isinstance(exc, ProvError):
        error_line(str(exc))
        return exc.exit_code
    if debug:
        raise exc
    if isinstance(exc, ModuleNotFoundError) and exc.name:  # an incomplete install
        error_line(f"the Python package '{exc.name.split('.')[0]}' is not installed beside "
                   f"prov ({sys.executable}); this command needs it")
        return EXIT_UNAVAILABLE
    first = one_line((str(exc).splitlines() or [""])[0])
    print(f"prov: internal error: {type(exc).__name__}: {first} "
          "(PROV_DEBUG=1 shows the traceback)", file=sys.stderr)
    return EXIT_INTERNAL


def _click_status(exc: BaseException) -> int | None:
    """The exit status of typer's and click's own exceptions (printing their line), or None."""
    if isinstance(exc, typer.Exit):
        return exc.exit_code
    if isinstance(exc, click_exc.UsageError):
        where = exc.ctx.command_path if exc.ctx is not None else "prov"
        error_line(f"{exc.format_message()} (see '{where} --help')")
        return 2
    if isinstance(exc, click_exc.ClickException):
        error_line(exc.format_message())
        return exc.exit_code or 2
    if isinstance(exc, getattr(click_exc, "Abort", ())):
        print("prov: aborted", file=sys.stderr)
        return 130
    return None
