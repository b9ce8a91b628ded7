"""Digests and a reader that re-hashes a blob while it streams and refuses a mismatch."""

from __future__ import annotations

import hashlib
import re
from typing import BinaryIO

from containers.errors import ImageError
from containers.hashing import BackgroundHash

DIGEST_RE = re.compile(r"^sha256:[0-9a-f]{64}$")


def check_digest(value: object, what: str) -> str:
    """`value` if it is a well-formed sha256 digest; untrusted JSON is checked at the edge."""
    if not isinstance(value, str) or not DIGEST_RE.match(value):
        raise ImageError(f"{what}: not a sha256 digest: {str(value)[:80]!r}")
    return value


def sha256_of(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def chain_ids(diff_ids: list[str]) -> list[str]:
    """OCI ChainIDs: ChainID(L0) = DiffID(L0), ChainID(Ln) = sha256(ChainID(Ln-1) DiffID(Ln))."""
    out: list[str] = []
    for diff_id in diff_ids:
        out.append(diff_id if not out else sha256_of(f"{out[-1]} {diff_id}".encode()))
    return out


class VerifyingReader:
    """Wraps a byte stream; at EOF the bytes must hash to `digest` (and `size`, if known)."""

    def __init__(self, raw: BinaryIO, digest: str, size: int | None, what: str) -> None:
        self._raw = raw
        self._digest = digest
        self._size = size
        self._what = what
        self._hash = BackgroundHash()
        self.count = 0
        self._done = False

    def read(self, n: int = -1) -> bytes:
        if self._done:
            return b""
        try:
            data = self._raw.read(n)
        except OSError as exc:
            raise ImageError(f"{self._what}: read failed: {exc}") from exc
        if data:
            self._hash.update(data)
            self.count += len(data)
            if self._size is not None and self.count > self._size:
                raise ImageError(
                    f"{self._what}: longer than its descriptor's size {self._size}"
                )
            return data
        self._done = True
        self._finish()
        return b""

    def _finish(self) -> None:
        got = "sha256:" + self._hash.hexdigest()
        if self._size is not None and self.count != self._size:
            raise ImageError(
                f"{self._what}: truncated: {self.count} bytes, descriptor says {self._size}"
            )
        if got != self._digest:
            raise ImageError(f"{self._what}: digest mismatch: expected {self._digest}, got {got}")

    @property
    def verified_digest(self) -> str | None:
        """The digest once the whole stream was read and matched; None before."""
        return self._digest if self._done else None

    def drain(self) -> None:
        """Read to the end so the digest is checked even when the consumer stopped early."""
        while self.read(1 << 20):
            pass

    def close(self) -> None:
        self._hash.close()
        close = getattr(self._raw, "close", None)
        if close:
            close()
