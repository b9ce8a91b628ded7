"""How a failed command ends: one line on stderr and the exit status of the error table.

`provenance.cli.run` (after click's own usage errors) and the fast `prov snapshot` path
(cli/fast.py, before typer is imported) both end here, so every error is worded once.
"""

from __future__ import annotations

import os
import sys

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
    """Print `exc` as one line; its exit status. A ProvError is the user's to fix; an
    OSError on a path they named (a name too long, a symlink loop) is one too; anything else
    is a bug in prov (exit 70), raised again under PROV_DEBUG=1 for its traceback."""
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
