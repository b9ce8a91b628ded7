"""Agreement summaries: first disagreement and llama.cpp-style percentiles."""

from __future__ import annotations

import numpy as np

# llama.cpp's KL-divergence mode prints these; we add p99.9 and keep the minimum.
PERCENTILES = (99.9, 99.0, 95.0, 90.0, 50.0, 10.0, 5.0, 1.0)


def first_disagreement(agree: np.ndarray) -> int | None:
    """Index of the first position whose top-1 differs, or None when all agree."""
    idx = np.flatnonzero(~agree)
    return int(idx[0]) if len(idx) else None


def percentiles(values: np.ndarray) -> dict[str, float]:
    v = np.asarray(values, dtype=np.float64)
    out = {"mean": float(v.mean()), "max": float(v.max()), "min": float(v.min())}
    for p in PERCENTILES:
        out[f"p{p:g}"] = float(np.percentile(v, p))
    return out
