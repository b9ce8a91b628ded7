"""Bundles as directories or deterministic .tar.gz files, and bounded, streaming extraction.

A bundle archive is untrusted input: it is read once, front to back (`r|gz`), every member's
size is checked against the bounds from its header before a byte of it is read, only plain
files and directories with safe, unique names are accepted, and the gzip trailer (CRC-32 and
length) is read and checked at the end. A 2 GiB member in a 2 MB archive is refused at its
header; a deflate error or a bad CRC is a one-line failure.
"""

from __future__ import annotations

import gzip
import io
import tarfile
import zlib
from pathlib import Path, PurePosixPath

from provenance.model.atomic import write_atomic
from provenance.model.errors import ProvError

MAX_MEMBER_BYTES = 256 << 20  # one result file, run record or SBOM
MAX_TOTAL_BYTES = 1 << 30  # everything unpacked
MAX_MEMBERS = 10_000
_CHUNK = 1 << 20


class ArchiveError(ProvError):
    """The archive is not a bundle prov accepts; verify reports it at step 1 (exit 1)."""

    exit_code = 1


def is_archive(path: str | Path) -> bool:
    return str(path).endswith((".tar.gz", ".tgz"))


def write_tar_gz(src: Path, out: Path) -> None:
    """Sorted members, zero mtimes/owners, fixed modes: same bundle, same bytes."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(p for p in src.rglob("*")):
            rel = path.relative_to(src).as_posix()
            info = tarfile.TarInfo(rel)
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
            if path.is_dir():
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            else:
                data = path.read_bytes()
                info.size, info.mode = len(data), 0o644
                tar.addfile(info, io.BytesIO(data))
    raw = io.BytesIO()
    with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as gz:
        gz.write(buf.getvalue())
    write_atomic(out, raw.getvalue())


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
        with open(archive, "rb") as raw, gzip.GzipFile(fileobj=raw, mode="rb") as gz:
            with tarfile.open(fileobj=gz, mode="r|") as tar:
                total = 0
                for member in tar:
                    total += _check_member(member, names, max_member, max_total, total)
                    _unpack(tar, member, dest)
            while gz.read(_CHUNK):  # the rest, so the gzip trailer (CRC-32, size) is checked
                pass
    except ProvError:
        raise
    except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise ArchiveError(f"{archive}: not a readable bundle archive ({first})") from None
    return names


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
