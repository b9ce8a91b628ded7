"""numpy arrays as the bytes of a .npy/.npz file, for the one atomic writer to write."""

from __future__ import annotations

import io

import numpy as np


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def npy_bytes(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()
