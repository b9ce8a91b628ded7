"""Read-only access to the files of an image tar or directory, by name, never by escaping.

Names come from untrusted documents (docker-archive's manifest.json names its layer files),
so they are normalised and `..` is refused; symlinks in a directory layout are not followed
out of it.
"""

from __future__ import annotations

import os
import tarfile
from pathlib import Path
from typing import BinaryIO

from containers.errors import ImageError
from containers.tarstream import normalize


class Tree:
    def __init__(self, path: Path, what: str) -> None:
        self.what = what
        self.path = path
        self._tar: tarfile.TarFile | None = None
        self._members: dict[str, tarfile.TarInfo] = {}
        if path.is_dir():
            self._root = path.resolve()
            return
        if not path.is_file():
            raise ImageError(f"{what}: no such file or directory: {path}")
        with open(path, "rb") as fh:
            magic = fh.read(4)
        if magic[:2] == b"\x1f\x8b" or magic == b"\x28\xb5\x2f\xfd":
            raise ImageError(f"{what}: {path} is compressed; decompress it first (gzip -d)")
        try:
            self._tar = tarfile.open(path, "r:")  # noqa: SIM115 - kept open until close()
            for member in self._tar:
                name = normalize(member.name, what)
                self._members[name] = member
                if len(self._members) > MAX_MEMBERS:
                    raise ImageError(f"{what}: more than {MAX_MEMBERS} members in the "
                                     "archive; refused")
            self._tar.members = []  # the index above is all we keep
            _check_tail(path, self._tar.offset + tarfile.BLOCKSIZE, what)
        except (tarfile.TarError, EOFError, OSError) as exc:
            raise ImageError(f"{what}: not a readable tar: {exc}") from exc

    def close(self) -> None:
        if self._tar is not None:
            self._tar.close()

    def _member(self, name: str) -> tarfile.TarInfo | None:
        member = self._members.get(name)
        hops = 0
        while member is not None and (member.issym() or member.islnk()):
            hops += 1
            if hops > 8:
                return None
            target = member.linkname
            if member.issym():
                target = os.path.join(os.path.dirname(name), target)
            try:
                name = normalize(os.path.normpath(target), self.what)
            except ImageError:
                return None
            member = self._members.get(name)
        return member

    def exists(self, name: str) -> bool:
        name = normalize(name, self.what)
        if self._tar is not None:
            return self._member(name) is not None
        return self._file(name) is not None

    def _file(self, name: str) -> Path | None:
        full = (self._root / name).resolve()
        if not full.is_relative_to(self._root) or not full.is_file():
            return None
        return full

    def open(self, name: str) -> BinaryIO:
        name = normalize(name, self.what)
        if self._tar is not None:
            member = self._member(name)
            if member is None or not member.isfile():
                raise ImageError(f"{self.what}: missing {name}")
            if member.sparse is not None:
                fh = self._tar.extractfile(member)
                assert fh is not None
                return fh  # type: ignore[return-value]
            # a plain member is a byte range: read it directly, without tarfile's layers
            raw = open(self.path, "rb", buffering=0)  # noqa: SIM115 - closed by the caller
            raw.seek(member.offset_data)
            return _Range(raw, member.size)  # type: ignore[return-value]
        full = self._file(name)
        if full is None:
            raise ImageError(f"{self.what}: missing {name}")
        return open(full, "rb")

    def size(self, name: str) -> int:
        name = normalize(name, self.what)
        if self._tar is not None:
            member = self._member(name)
            return member.size if member is not None else -1
        full = self._file(name)
        return full.stat().st_size if full is not None else -1

    def read(self, name: str, limit: int = 8 << 20) -> bytes:
        if self.size(name) > limit:
            raise ImageError(f"{self.what}: {name} larger than {limit} bytes; refused")
        with self.open(name) as fh:
            return fh.read(limit + 1)


MAX_MEMBERS = 100_000  # an image archive holds a few files per layer and blob


def _check_tail(path: Path, end: int, what: str) -> None:
    """Nothing but NUL padding after the archive's end-of-archive block (what `tar -i`
    would read on into, and no digest covers)."""
    with open(path, "rb") as fh:
        fh.seek(end)
        while data := fh.read(1 << 20):
            if data.strip(b"\0"):
                raise ImageError(f"{what}: data after the archive's end-of-archive block; "
                                 "refused")


class _Range:
    """`size` bytes of an open file from its current position."""

    def __init__(self, raw: BinaryIO, size: int) -> None:
        self._raw = raw
        self._left = size

    def read(self, n: int = -1) -> bytes:
        if self._left <= 0:
            return b""
        n = self._left if n < 0 else min(n, self._left)
        data = self._raw.read(n)
        self._left -= len(data)
        return data

    def close(self) -> None:
        self._raw.close()

    def __enter__(self) -> _Range:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class TreeBlobs:
    """`blobs/sha256/<hex>` of an OCI layout inside a Tree, verified on read."""

    def __init__(self, tree: Tree, prefix: str = "") -> None:
        self.tree = tree
        self.prefix = prefix

    def _name(self, digest: str) -> str:
        algo, _, hexd = digest.partition(":")
        return f"{self.prefix}blobs/{algo}/{hexd}"

    def document(self, digest: str, what: str) -> bytes:
        from containers.resolve import verified_document

        name = self._name(digest)
        if not self.tree.exists(name):
            raise ImageError(f"{what}: blob missing from the layout")
        return verified_document(self.tree.read(name), digest, what)

    def open(self, digest: str, size: int | None, what: str):
        from containers.digest import VerifyingReader

        return VerifyingReader(self.tree.open(self._name(digest)), digest, size, what)
