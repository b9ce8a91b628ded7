"""Atomic file writes: temp file in the target directory, fsync, rename.

A reader never sees half a file, and a crash leaves the old file or the new one. The file
gets the permissions a plain `open(path, "w")` would give (0666 less the umask), not
mkstemp's private 0600.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def _default_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def write_atomic(path: str | Path, data: bytes | str, mode: int | None = None) -> None:
    from provenance.model.inputs import check_output

    path = check_output(path)  # create or replace a regular file; never a device or a dir
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=str(path.parent) or ".")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, _default_mode() if mode is None else mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
