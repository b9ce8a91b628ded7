"""Atomic file output shared by the sbom/audit/publish commands."""

from __future__ import annotations

from pathlib import Path

from provenance.model.errors import ProvError


def write_atomic(path: Path, data: bytes | str, mode: int | None = None) -> None:
    """Temp file in the target directory, fsync, rename: never a half-written file."""
    path = Path(path)
    if not path.parent.is_dir():
        raise ProvError(f"{path.parent}: no such directory")
    from provenance.model.atomic import write_atomic as write

    write(path, data, mode)
