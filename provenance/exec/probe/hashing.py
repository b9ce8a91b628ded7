"""The one file-digest cache prov exec uses (sha256 by device, inode, size, mtime, ctime)."""

from __future__ import annotations

from pathlib import Path

from provenance.exec.libraries import FileHasher


def file_hasher(cache: Path | None = None) -> FileHasher:
    return FileHasher(cache)
