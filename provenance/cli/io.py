"""Atomic file output shared by the sbom/audit/publish commands."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from provenance.errors import ProvError


def write_atomic(path: Path, data: bytes | str, mode: int = 0o644) -> None:
    """Temp file in the target directory, fsync, rename: never a half-written file."""
    path = Path(path)
    if not path.parent.is_dir():
        raise ProvError(f"{path.parent}: no such directory")
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
