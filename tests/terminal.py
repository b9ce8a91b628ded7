"""Run a command with its stdout and stderr on a pseudo-terminal of a given width, as a user
at a terminal sees it: one stream, `\\r\\n` read back as `\\n`. stdin is /dev/null, so the
command never owns the terminal (prov exec's job control stays out of it)."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import termios
from pathlib import Path


def on_terminal(argv: list[str], env: dict[str, str], cwd: str | Path | None = None,
                columns: int = 100, timeout: float = 300) -> tuple[int, str]:
    """(exit status, what the terminal showed)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    proc = subprocess.Popen(argv, env={**env, "COLUMNS": str(columns)}, cwd=cwd,
                            stdin=subprocess.DEVNULL, stdout=slave, stderr=slave)
    os.close(slave)
    out = bytearray()
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: every writer closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    return proc.wait(timeout=timeout), out.decode(errors="replace").replace("\r\n", "\n")
