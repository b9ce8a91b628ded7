"""The one file-digest cache prov exec uses (sha256 by device, inode, size, mtime, ctime)."""

from __future__ import annotations

from pathlib import Path

from provenance.exec.libraries import FileDigestCache


def file_hasher(cache: Path | None = None) -> FileDigestCache:
    return FileDigestCache(cache)
