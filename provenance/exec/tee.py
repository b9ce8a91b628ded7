"""Stream the command's stdout and stderr to the terminal and into the store, in chunks."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from typing import Any

from provenance.store.objects import space_reason

CHUNK = 1 << 20
F_SETPIPE_SZ = 1031


class Tee:
    """Copy one pipe to a terminal fd (optional) and a store writer, in bounded chunks."""

    def __init__(self, pipe: Any, dst: int | None, writer) -> None:
        self.pipe = pipe  # the file object owning `src`
        self.src: int = pipe.fileno()
        self.dst = dst
        self.writer = writer
        self.open = True
        self.broken = False
        grow_pipe(self.src)
        os.set_blocking(self.src, False)

    def pump(self) -> int:
        try:
            data = os.read(self.src, CHUNK)
        except BlockingIOError:
            return 0
        except OSError:
            data = b""
        if not data:
            self.open = False
            return 0
        if self.dst is not None:
            self._to_terminal(data)
        self._store(data)
        return len(data)

    def _store(self, data: bytes) -> None:
        """Into the store, until a write fails: then the log keeps its prefix and says why
        (the record reads "log truncated: disk full"); the terminal still gets everything."""
        if self.writer.truncated:
            return
        try:
            self.writer.write(data)
        except OSError as exc:
            self.writer.stop(space_reason(exc))

    def _to_terminal(self, data: bytes) -> None:
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self.dst, view) :]
        except BlockingIOError:
            # a non-blocking terminal: wait until it can take more
            import select

            select.select([], [self.dst], [])
        except OSError as exc:
            if exc.errno not in (errno.EPIPE, errno.EBADF):
                raise
            # The reader went away (`prov exec -- yes | head -1`): close the command's
            # pipe too, so it gets SIGPIPE as it would without prov, not run forever.
            self.dst = None
            self.open = False
            self.broken = True


def grow_pipe(fd: int) -> None:
    with contextlib.suppress(OSError):
        fcntl.fcntl(fd, F_SETPIPE_SZ, CHUNK)
