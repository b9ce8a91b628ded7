"""The one atomic writer: temp file in the target directory, fsync, rename.

A reader never sees half a file, and a crash leaves the old file or the new one. The file
gets the permissions a plain `open(path, "w")` would give (0666 less the umask), not
mkstemp's private 0600, unless the caller asks for a mode (a private key: 0600).
Directories are published the same way: built under a temp name, then renamed into place.

Standard library only: the engine workers (runners/worker*.py) write through it too.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


def _default_mode() -> int:
    return 0o666 & ~_umask()


@contextmanager
def atomic_open(path: str | Path, mode: int | None = None) -> Iterator[BinaryIO]:
    """Open a temp file beside `path` for binary writing; on a clean exit it is fsynced,
    given `mode` (default: 0666 less the umask) and renamed over `path`; on an error it is
    removed and `path` is untouched."""
    from provenance.model.inputs import check_output

    path = check_output(path)  # create or replace a regular file; never a device or a dir
    directory = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, _default_mode() if mode is None else mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_atomic(path: str | Path, data: bytes | str, mode: int | None = None) -> None:
    """Write `data` (str as UTF-8) to `path` atomically (see `atomic_open`)."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    with atomic_open(path, mode) as fh:
        fh.write(raw)


def replace_dir(tmp: str | Path, final: str | Path) -> None:
    """Move a fully written temp directory into place, replacing an older file or directory;
    the directory gets a plain `mkdir`'s permissions (mkdtemp's are private 0700)."""
    tmp, final = Path(tmp), Path(final)
    os.chmod(tmp, 0o777 & ~_umask())
    if not (final.exists() or final.is_symlink()):
        os.replace(tmp, final)
        return
    old = final.with_name(f".{final.name}.old-{os.getpid()}")
    os.replace(final, old)
    os.replace(tmp, final)
    if old.is_dir() and not old.is_symlink():
        shutil.rmtree(old, ignore_errors=True)
    else:
        old.unlink(missing_ok=True)
