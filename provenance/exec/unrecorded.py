"""The command runs when prov cannot record it (a full, damaged or read-only store).

prov is a wrapper: a store that cannot take a run must not cost the user the run itself.
`prov exec` then runs the command exactly as it would a recorded one (its own process
group, signals forwarded, the terminal handed over, ^Z, output streamed through the same
loop), stores nothing, says so on stderr before the command starts and after it ends, and
exits with the command's status. `why` words the reason in one line.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from provenance.exec import process
from provenance.exec.logs import LostLog
from provenance.exec.watch import watch
from provenance.model.errors import ProvError, one_line, os_error


def why(exc: BaseException) -> str:
    """What stopped prov from recording, in one line (a bug in prov is called one)."""
    if isinstance(exc, OSError):
        exc = os_error(exc) or exc
    if isinstance(exc, ProvError):
        text = str(exc)
    elif isinstance(exc, OSError):
        text = exc.strerror or str(exc)
    elif isinstance(exc, sqlite3.Error):
        text = f"the store's index failed ({exc})"
    else:
        text = (f"internal error: {type(exc).__name__}: {(str(exc).splitlines() or [''])[0]} "
                "(PROV_DEBUG=1 shows the traceback)")
    return one_line(text)


def warn(text: str) -> None:
    sys.stderr.write(f"prov: warning: {one_line(text)}\n")
    sys.stderr.flush()


def run_unrecorded(argv: Sequence[str], workdir: Path | None,
                   env_extra: Mapping[str, str] | None, stream: bool,
                   reason: str) -> dict[str, Any]:
    """Run `argv` (in `workdir`, None: prov's own working directory) without a record.
    Returns the summary fields of the result: exit status, signal, times, the reason."""
    if os.environ.get("PROV_DEBUG") and sys.exc_info()[0] is not None:
        import traceback

        traceback.print_exc()
    warn(f"NOT RECORDED: {reason}; running the command anyway, nothing will be stored")
    started = time.time()
    env = {**os.environ, **(env_extra or {})}
    owns_terminal = process.takes_terminal(stream)
    try:
        proc = process.spawn(argv, env, workdir, owns_terminal)
    except OSError as exc:
        status = 127 if isinstance(exc, FileNotFoundError) else 126
        warn(f"cannot run {argv[0]}: {exc.strerror or exc}; nothing was recorded")
        return _summary(status, None, reason, started)
    fg = process.Foreground(owns_terminal)
    fg.give(proc.pid)
    forwarded: list[int] = []
    handlers = process.install_forwarding(proc.pid, forwarded)
    try:
        returncode, _usage, _ = watch(proc, LostLog(reason), LostLog(reason), stream,
                                      False, fg)
    finally:
        process.restore_handlers(handlers)
        fg.restore()
    status, signame = process.exit_status(returncode)
    warn(f"NOT RECORDED: the command exited {status}; nothing was stored ({reason})")
    summary = _summary(status, signame, reason, started)
    summary["interrupted"] = bool(process.INTERRUPTS.intersection(forwarded))
    return summary


def _summary(status: int, signame: str | None, reason: str, started: float) -> dict[str, Any]:
    return {"exit_status": status, "signal": signame, "error": f"not recorded: {reason}",
            "duration_s": round(time.time() - started, 6), "interrupted": False}
