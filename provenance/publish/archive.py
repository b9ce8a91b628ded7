"""Bundles as directories or deterministic .tar.gz files, and bounded, streaming extraction.

A bundle archive is untrusted input: it is read once, front to back (`r|gz`), every member's
size is checked against the bounds from its header before a byte of it is read (bounds.py),
only plain files and directories with safe, unique names are accepted, nothing but NUL
padding may follow the tar's end-of-archive block (a second gzip member there would hold
files `tar -i` extracts and verification never saw), and the gzip trailer (CRC-32 and
length) is read and checked at the end. A 2 GiB member in a 2 MB archive is refused at its
header; a deflate error, a bad CRC or trailing data is a one-line failure.
"""

from __future__ import annotations

import gzip
import tarfile
import zlib
from pathlib import Path, PurePosixPath

from provenance.model.atomic import atomic_open
from provenance.model.errors import ProvError
from provenance.publish.bounds import (
    MAX_MEMBER_BYTES,
    MAX_MEMBERS,
    MAX_TOTAL_BYTES,
    check_size,
)

_CHUNK = 1 << 20


class ArchiveError(ProvError):
    """The archive is not a bundle prov accepts; verify reports it at step 1 (exit 1)."""

    exit_code = 1


def is_archive(path: str | Path) -> bool:
    return str(path).endswith((".tar.gz", ".tgz"))


def write_tar_gz(src: Path, out: Path) -> None:
    """Sorted members, zero mtimes/owners, fixed modes: same bundle, same bytes. Streamed
    file by file into the archive (memory stays one chunk, whatever the results weigh)."""
    with (atomic_open(out) as raw,
          gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as gz,
          tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar):
        for path in sorted(p for p in src.rglob("*")):
            rel = path.relative_to(src).as_posix()
            info = tarfile.TarInfo(rel)
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
            if path.is_dir():
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
                continue
            with open(path, "rb") as data:
                info.size, info.mode = path.stat().st_size, 0o644
                tar.addfile(info, data)


def safe_member_name(name: str) -> str | None:
    """Why `name` may not be a bundle member, or None: relative, no `..`, printable."""
    if not name or name.startswith("/") or "\\" in name:
        return "absolute or backslash path"
    if any(p in ("..", "") for p in PurePosixPath(name).parts) or name.startswith("./"):
        return "path with '..' or empty parts"
    if not name.isprintable():
        return "unprintable name"
    return None


def extract_tar_gz(archive: Path, dest: Path, max_member: int = MAX_MEMBER_BYTES,
                   max_total: int = MAX_TOTAL_BYTES) -> list[str]:
    """Unpack `archive` into `dest` within the bounds; the member file names, in order."""
    names: list[str] = []
    try:
        with (open(archive, "rb") as raw, gzip.GzipFile(fileobj=raw, mode="rb") as gz,
              tarfile.open(fileobj=gz, mode="r|") as tar):
            total = 0
            for member in tar:
                total += _check_member(member, names, max_member, max_total, total)
                _unpack(tar, member, dest)
            _check_end(tar, archive)  # the rest, so the gzip trailer is checked too
    except ProvError:
        raise
    except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise ArchiveError(f"{archive}: not a readable bundle archive ({first})") from None
    return names


def _check_end(tar: tarfile.TarFile, archive: Path) -> None:
    """After the end-of-archive block, only NUL padding, to the end of the last gzip member.

    GNU tar stops at that block too, but `tar -i` (--ignore-zeros) reads on: files in a
    second gzip member, or after the zeros, would be extracted by it and never verified."""
    stream = tar.fileobj  # tarfile's own reader: it holds what it read ahead of the block
    assert stream is not None
    offset = tar.offset + tarfile.BLOCKSIZE  # the end-of-archive block itself was read
    while chunk := stream.read(_CHUNK):
        if chunk.strip(b"\0"):
            at = offset + len(chunk) - len(chunk.lstrip(b"\0"))
            raise ArchiveError(f"{archive}: data after the tar's end-of-archive block (byte "
                               f"{at} of the tar stream): a file hidden there would be read "
                               "by `tar -i` and never verified; refused")
        offset += len(chunk)


def _check_member(member: tarfile.TarInfo, names: list[str], max_member: int,
                  max_total: int, total: int) -> int:
    name = member.name.rstrip("/") if member.isdir() else member.name
    why = safe_member_name(name)
    if why:
        raise ArchiveError(f"bundle member {name!r}: {why}")
    if not (member.isfile() or member.isdir()):
        raise ArchiveError(f"bundle member {name}: not a plain file or directory")
    if name in names:
        raise ArchiveError(f"bundle member {name}: appears twice")
    if member.size < 0:  # a negative size field would send a reader backwards
        raise ArchiveError(f"bundle member {name}: negative size {member.size}")
    check_size(name, member.size)  # the attestation and documents: refused unread, exit 2
    if member.size > max_member:
        raise ArchiveError(f"bundle member {name}: {member.size} bytes, over the "
                           f"{max_member}-byte bound for one member")
    if total + member.size > max_total:
        raise ArchiveError(f"bundle unpacks to more than {max_total} bytes")
    if len(names) >= MAX_MEMBERS:
        raise ArchiveError(f"bundle has more than {MAX_MEMBERS} members")
    names.append(name)
    return member.size


def _unpack(tar: tarfile.TarFile, member: tarfile.TarInfo, dest: Path) -> None:
    target = dest / member.name
    if member.isdir():
        target.mkdir(parents=True, exist_ok=True)
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    src = tar.extractfile(member)
    if src is None:  # pragma: no cover - isfile() members always have data
        raise ArchiveError(f"bundle member {member.name}: no data")
    left = member.size
    with open(target, "xb") as out:  # "x": a name can only be written once
        while left:
            chunk = src.read(min(_CHUNK, left))
            if not chunk:
                raise ArchiveError(f"bundle member {member.name}: truncated")
            out.write(chunk)
            left -= len(chunk)
