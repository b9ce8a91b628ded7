"""Per-block digests of raw tensor bytes, so repeats compare bit for bit, block by block."""

from __future__ import annotations

import hashlib

import numpy as np


def block_digests(raw: np.ndarray, block: int) -> list[str]:
    """sha256 of each block of `block` rows of `raw` (rows = positions), over its raw bytes."""
    raw = np.ascontiguousarray(raw)
    return [
        hashlib.sha256(raw[i : i + block].tobytes()).hexdigest()
        for i in range(0, max(len(raw), 1), block)
    ]
