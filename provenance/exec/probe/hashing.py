"""The one file-digest cache prov exec uses (sha256 by device, inode, size, mtime)."""

from __future__ import annotations

from pathlib import Path


def file_hasher(cache: Path | None = None):
    # the loaded-libraries hasher; it moves from runners/ into provenance/exec/ (layout)
    try:
        from provenance.exec.libraries import FileHasher
    except ImportError:
        from runners.loaded_libs import FileHasher
    return FileHasher(cache)
