"""Per-file digests taken while a layer streams past: what file verification compares.

Which digests a file gets is decided by its path alone, before anyone knows who claims it
(a package's RECORD or md5sums may come later in the same layer, or in a later one):

- sha256, always: Python RECORD rows and conda's `paths.json` use it;
- md5 as well, unless the file lies in a `site-packages`/`dist-packages` tree outside
  `usr/` (Debian's own Python packages live under usr/): dpkg's `md5sums` use md5, and
  dpkg does not install into virtual environments or conda prefixes.

A digest is raw bytes (32 + 16), so the table for 100k+ files stays a few tens of MB.
"""

from __future__ import annotations

import hashlib
from typing import NamedTuple, Protocol

_PY_TREES = ("/site-packages/", "/dist-packages/")


class FileDigest(NamedTuple):
    layer: int  # the layer that last wrote the file
    size: int
    sha256: bytes
    md5: bytes | None  # None: not taken (see the module docstring)


class _Body(Protocol):
    def feed(self, sink) -> None: ...


def wants_md5(path: str) -> bool:
    if path.startswith("usr/"):
        return True
    return not any(tree in path for tree in _PY_TREES)


def digest_bytes(layer: int, path: str, data: bytes) -> FileDigest:
    md5 = hashlib.md5(data).digest() if wants_md5(path) else None
    return FileDigest(layer, len(data), hashlib.sha256(data).digest(), md5)


def digest_body(layer: int, path: str, size: int, body: _Body) -> FileDigest:
    """Hash a member's body as it streams (one chunk in memory at a time)."""
    sha = hashlib.sha256()
    if not wants_md5(path):
        body.feed(sha.update)
        return FileDigest(layer, size, sha.digest(), None)
    md5 = hashlib.md5()
    update_sha, update_md5 = sha.update, md5.update

    def both(data: bytes) -> None:
        update_sha(data)
        update_md5(data)

    body.feed(both)
    return FileDigest(layer, size, sha.digest(), md5.digest())
