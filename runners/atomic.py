"""Write files and directories so a crash leaves the old state or the new one, never half."""

from __future__ import annotations

import io
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np


def write_bytes(path: Path, data: bytes) -> None:
    # Self-contained on purpose: workers run inside other interpreters (a vLLM venv) that
    # see only the `runners` package, not `provenance`.
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def replace_dir(tmp: Path, final: Path) -> None:
    """Move a fully written temp directory into place (replacing an older one)."""
    final = Path(final)
    if final.exists():
        old = final.with_name(f".{final.name}.old-{os.getpid()}")
        os.replace(final, old)
        os.replace(tmp, final)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, final)


def npy_bytes(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()
