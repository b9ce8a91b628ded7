"""sha256 digests, written one way.

The convention: a digest prov records, compares or prints names its algorithm,
`sha256:<64 lowercase hex>` (the manifest's digest, a run's outputs, loaded libraries,
model files, store object names as records cite them), as OCI descriptors write it. The bare
hex is written only where a format fixes it: in-toto's digest sets (`{"sha256": "<hex>"}`),
CycloneDX hashes, a PEP 751 lock's `hashes`, and the store's object paths; it is taken from
a digest with `hex_of`, never by slicing.
"""

from __future__ import annotations

import hashlib
import os

PREFIX = "sha256:"


def sha256_digest(data: bytes) -> str:
    """`sha256:<hex>` of `data`."""
    return PREFIX + hashlib.sha256(data).hexdigest()


def file_sha256_size(path: str | os.PathLike[str]) -> tuple[str, int]:
    """(`sha256:<hex>`, bytes read) of a file, read once (OSError as the file gives it)."""
    with open(path, "rb") as fh:
        digest = hashlib.file_digest(fh, "sha256")
        return PREFIX + digest.hexdigest(), fh.tell()


def file_sha256(path: str | os.PathLike[str]) -> str:
    """`sha256:<hex>` of a file's bytes."""
    return file_sha256_size(path)[0]


def hex_of(digest: str) -> str:
    """The hex of a `sha256:<hex>` digest (ValueError for anything else)."""
    if not digest.startswith(PREFIX):
        raise ValueError(f"not a sha256 digest: {digest[:80]!r}")
    return digest[len(PREFIX):]
