"""Content-addressed immutable objects: `<store>/objects/sha256/ab/cdef...`.

Every object is written to a temp file in `<store>/tmp/`, fsynced, then renamed into place,
so a killed writer leaves at worst a stray temp file, never a half-written object. Reads
re-hash the bytes and refuse an object whose content no longer matches its name.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from provenance.model.errors import ProvError

ALGO = "sha256"
_HEX = set("0123456789abcdef")


class CorruptObject(ProvError):
    """An object whose bytes do not hash to its name."""


class StoreFull(ProvError):
    """The store's filesystem is full (or over quota, or over the file-size limit)."""

    exit_code = 4


FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def space_reason(exc: OSError) -> str:
    """What a failed store write says in a record: 'disk full' for the space errors."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return "disk full"
    if exc.errno == errno.EFBIG:
        return "file size limit"
    return exc.strerror or str(exc)


def store_full(exc: OSError, root: Path) -> StoreFull:
    return StoreFull(f"{root}: cannot write the store ({space_reason(exc)})")


def split_digest(digest: str) -> str:
    """The hex part of `sha256:<hex>` (or of a bare hex string)."""
    algo, sep, hexpart = digest.partition(":")
    if not sep:
        hexpart = algo
    elif algo != ALGO:
        raise ProvError(f"{digest}: unsupported digest algorithm {algo!r}")
    hexpart = hexpart.lower()
    if not hexpart or set(hexpart) - _HEX:
        raise ProvError(f"{digest}: not a sha256 digest")
    return hexpart


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _freshen(path: Path) -> None:
    """Mark an existing object as just written: `prov store gc --objects` spares objects
    younger than its grace period, so one a new record is about to refer to stays (as git
    freshens a loose object it would have written)."""
    with contextlib.suppress(OSError):
        os.utime(path)


class ObjectStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.objects = root / "objects" / ALGO
        self.tmp = root / "tmp"

    def path_for(self, digest: str) -> Path:
        hexpart = split_digest(digest)
        if len(hexpart) != 64:
            raise ProvError(f"{digest}: not a full sha256 digest")
        return self.objects / hexpart[:2] / hexpart[2:]

    def has(self, digest: str) -> bool:
        return self.path_for(digest).exists()

    # -- writing ----------------------------------------------------------------
    def _temp(self, prefix: str = "obj-") -> tuple[int, str]:
        try:
            self.tmp.mkdir(parents=True, exist_ok=True)
            return tempfile.mkstemp(prefix=prefix, dir=self.tmp)
        except OSError as exc:
            if exc.errno in FULL_ERRNOS:
                raise store_full(exc, self.root) from None
            raise

    def _install(self, tmp: str, hexdigest: str) -> str:
        """Rename a complete, fsynced temp file into place (or drop it if already there)."""
        digest = f"{ALGO}:{hexdigest}"
        final = self.path_for(digest)
        if final.exists():
            os.unlink(tmp)
            _freshen(final)
            return digest
        final.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(tmp, 0o444)
        os.replace(tmp, final)
        _fsync_dir(final.parent)
        return digest

    def put_bytes(self, data: bytes) -> str:
        hexdigest = hashlib.sha256(data).hexdigest()
        if self.path_for(hexdigest).exists():
            _freshen(self.path_for(hexdigest))
            return f"{ALGO}:{hexdigest}"
        fd, tmp = self._temp()
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            return self._install(tmp, hexdigest)
        except OSError as exc:
            Path(tmp).unlink(missing_ok=True)
            if exc.errno in FULL_ERRNOS:
                raise store_full(exc, self.root) from None
            raise
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def writer(self, prefix: str = "obj-") -> StreamWriter:
        """A streaming writer for large content (logs, run files): bounded memory. Its temp
        file's name starts with `prefix` (a run's logs: found again if prov is killed)."""
        fd, tmp = self._temp(prefix)
        return StreamWriter(self, fd, tmp)

    def put_file(self, path: Path) -> tuple[str, int]:
        with open(path, "rb") as src, self.writer() as w:
            while chunk := src.read(1 << 20):
                w.write(chunk)
        return w.digest, w.size

    # -- reading ----------------------------------------------------------------
    def get_bytes(self, digest: str) -> bytes:
        path = self.path_for(digest)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise ProvError(f"object {digest} is missing from the store") from None
        if hashlib.sha256(data).hexdigest() != split_digest(digest):
            raise CorruptObject(f"object {digest} is corrupt: its content does not match its name")
        return data

    def open_verified(self, digest: str) -> Iterator[bytes]:
        """Yield the object's bytes in chunks; raise CorruptObject at the end on a mismatch."""
        path = self.path_for(digest)
        h = hashlib.sha256()
        try:
            fh: BinaryIO = open(path, "rb")  # noqa: SIM115 - closed by the with below
        except FileNotFoundError:
            raise ProvError(f"object {digest} is missing from the store") from None
        with fh:
            while chunk := fh.read(1 << 20):
                h.update(chunk)
                yield chunk
        if h.hexdigest() != split_digest(digest):
            raise CorruptObject(f"object {digest} is corrupt: its content does not match its name")

    def verify(self, digest: str) -> bool:
        try:
            for _ in self.open_verified(digest):
                pass
        except CorruptObject:
            return False
        return True

    def iter_digests(self) -> Iterator[tuple[str, Path]]:
        """Every (digest, path) under objects/; names that are not digests yield ('', path)."""
        if not self.objects.is_dir():
            return
        for sub in sorted(self.objects.iterdir()):
            if not sub.is_dir():
                yield "", sub
                continue
            for f in sorted(sub.iterdir()):
                hexpart = sub.name + f.name
                if len(sub.name) == 2 and len(hexpart) == 64 and not set(hexpart) - _HEX:
                    yield f"{ALGO}:{hexpart}", f
                else:
                    yield "", f

    def resolve_prefix(self, prefix: str) -> list[str]:
        hexpart = split_digest(prefix)
        if len(hexpart) < 2:
            return []
        sub = self.objects / hexpart[:2]
        if not sub.is_dir():
            return []
        return sorted(
            f"{ALGO}:{sub.name}{f.name}" for f in sub.iterdir() if f.name.startswith(hexpart[2:])
        )


class StreamWriter:
    """Hash while writing to a temp file; `close()` fsyncs and renames it into the store."""

    def __init__(self, store: ObjectStore, fd: int, tmp: str) -> None:
        self._store = store
        self._fh = os.fdopen(fd, "wb", buffering=0)
        self._tmp = tmp
        self._hash = hashlib.sha256()
        self.size = 0
        self.digest = ""
        self.truncated: str | None = None  # why the content stops short (`stop`)

    def write(self, data: bytes) -> None:
        """Append `data`; on OSError the file may hold part of it (see `stop`)."""
        view = memoryview(data)
        while view:
            n = self._fh.write(view)
            view = view[n:]
        self._hash.update(data)  # only once all of it is in the file
        self.size += len(data)

    def stop(self, reason: str) -> None:
        """Keep what was written before the failed write (cut back to `size`, which the hash
        covers) and accept no more: the object will be the content's prefix."""
        self.truncated = reason
        with contextlib.suppress(OSError):
            os.ftruncate(self._fh.fileno(), self.size)

    def close(self) -> str:
        if not self.digest:
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._fh.close()
            self.digest = self._store._install(self._tmp, self._hash.hexdigest())
        return self.digest

    def abort(self) -> None:
        if not self._fh.closed:
            self._fh.close()
        Path(self._tmp).unlink(missing_ok=True)

    def __enter__(self) -> StreamWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()
