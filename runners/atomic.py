"""Write files and directories so a crash leaves the old state or the new one, never half."""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path

import numpy as np


def write_bytes(path: Path, data: bytes) -> None:
    from provenance.model.atomic import write_atomic

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, data)


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
