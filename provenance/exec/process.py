"""The command's process: its own process group, the terminal, signals, its exit status.

The command runs in a process group of its own, so prov can forward terminal and
job-control signals to all of it and a ^C reaches the whole tree once. On a terminal the
command's group is made the foreground group (so it can read stdin and gets ^C itself);
^Z stops it and prov together, as in a shell.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

FORWARDED = (
    signal.SIGINT,
    signal.SIGTERM,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGUSR1,
    signal.SIGUSR2,
)
PR_SET_PDEATHSIG = 1

_LIBC: Any = None


def _libc() -> Any:
    """libc for prctl (loaded once; None where it cannot be loaded)."""
    global _LIBC
    if _LIBC is None:
        with contextlib.suppress(OSError):
            _LIBC = ctypes.CDLL(None, use_errno=True)
    return _LIBC


def _child_setup(parent: int, foreground: bool) -> None:
    """In the child before exec: own process group; die with prov so no run outlives it.

    On a terminal the child takes the terminal itself, before exec, so it can never read
    stdin while still in the background (SIGTTIN would stop it); the parent does the same
    after the fork, whichever runs first (as shells do).
    """
    os.setpgid(0, 0)
    if foreground:
        signal.signal(signal.SIGTTOU, signal.SIG_IGN)
        with contextlib.suppress(OSError):
            os.tcsetpgrp(0, os.getpgrp())
        signal.signal(signal.SIGTTOU, signal.SIG_DFL)
    if _LIBC is not None:
        _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:
        os._exit(128 + signal.SIGTERM)


def owns_terminal() -> bool:
    try:
        return os.isatty(0) and os.tcgetpgrp(0) == os.getpgrp()
    except OSError:
        return False


def takes_terminal(stream: bool) -> bool:
    """Only an interactive, streamed run in the main thread takes the terminal: runs
    supervised from worker threads must never steal it from each other."""
    return stream and threading.current_thread() is threading.main_thread() and owns_terminal()


def spawn(argv: Sequence[str], env: Mapping[str, str], cwd: Path | None,
          foreground: bool) -> subprocess.Popen:
    """Start the command with piped stdout/stderr in its own process group (OSError if not);
    `cwd` None: in prov's own working directory (one that was deleted, too)."""
    _libc()
    return subprocess.Popen(
        list(argv),
        stdin=None,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(env),
        cwd=None if cwd is None else str(cwd),
        preexec_fn=lambda parent=os.getpid(), fg=foreground: _child_setup(parent, fg),
        bufsize=0,
    )


class Foreground:
    """Hand the terminal to the command's process group (so it can read stdin and get ^C).

    Whether prov owns the terminal is decided before the fork: by the time the parent gets
    here the child may already have taken it (see _child_setup).
    """

    def __init__(self, owned: bool) -> None:
        self.fd: int | None = 0 if owned else None
        self.saved = os.getpgrp()

    def _set(self, pgid: int) -> None:
        old = signal.signal(signal.SIGTTOU, signal.SIG_IGN)
        try:
            os.tcsetpgrp(0, pgid)
        except OSError:
            pass
        finally:
            signal.signal(signal.SIGTTOU, old)

    def give(self, pgid: int) -> None:
        if self.fd is not None:
            self._set(pgid)

    def restore(self) -> None:
        if self.fd is not None:
            self._set(self.saved)


INTERRUPTS = frozenset({signal.SIGINT, signal.SIGTERM, signal.SIGHUP})


def install_forwarding(pid: int, forwarded: list[int]) -> dict[int, Any]:
    """Forward terminal and job-control signals to the command's process group; each one
    forwarded is appended to `forwarded` (a caller can tell the user interrupted the run)."""
    if threading.current_thread() is not threading.main_thread():
        return {}

    def forward(signum, _frame) -> None:
        forwarded.append(signum)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signum)

    old = {}
    for sig in FORWARDED:
        try:
            old[sig] = signal.signal(sig, forward)
        except (OSError, ValueError):
            continue
    return old


def restore_handlers(old: dict[int, Any]) -> None:
    for sig, handler in old.items():
        signal.signal(sig, handler)


def suspend_with(pid: int, fg: Foreground | None) -> None:
    """The command was stopped (^Z): stop prov too, then resume both together."""
    if fg is not None:
        fg.restore()
    os.kill(os.getpid(), signal.SIGSTOP)
    # continued by the shell (`fg` or `bg`): the terminal goes back only if it is ours
    if fg is not None and owns_terminal():
        fg.give(pid)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGCONT)


def exit_status(returncode: int) -> tuple[int, str | None]:
    """The status prov exits with (128+N for signal N, as a shell says) and the signal name."""
    if returncode < 0:
        sig = -returncode
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        return 128 + sig, name
    return returncode, None
