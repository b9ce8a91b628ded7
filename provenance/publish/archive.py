"""Bundles as directories or deterministic .tar.gz files, and safe extraction."""

from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path

from provenance.model.atomic import write_atomic
from provenance.model.errors import ProvError


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


def extract_tar_gz(archive: Path, dest: Path) -> None:
    """Regular files and directories only, never outside `dest` (untrusted input)."""
    try:
        with tarfile.open(archive, "r:gz") as tar:
            for member in tar.getmembers():
                name = member.name
                if name.startswith("/") or ".." in Path(name).parts:
                    raise ProvError(f"{archive}: unsafe path in bundle: {name}")
                if not (member.isfile() or member.isdir()):
                    raise ProvError(f"{archive}: bundle member {name} is not a plain file")
                target = dest / name
                if member.isdir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                fh = tar.extractfile(member)
                assert fh is not None
                target.write_bytes(fh.read())
    except (tarfile.TarError, OSError, EOFError, gzip.BadGzipFile) as exc:
        raise ProvError(f"{archive}: not a readable bundle archive ({exc})") from None
