"""Agreement summaries: first disagreement and llama.cpp-style percentiles."""

from __future__ import annotations

import numpy as np

# llama.cpp's --kl-divergence prints these for KL (99.9 ... 1, 0.1) and for Delta-p (with 75
# and 25 besides); one list for both, with the minimum, maximum and median.
PERCENTILES = (99.9, 99.0, 95.0, 90.0, 75.0, 50.0, 25.0, 10.0, 5.0, 1.0, 0.1)


def first_disagreement(agree: np.ndarray) -> int | None:
    """Index of the first position whose top-1 differs, or None when all agree."""
    idx = np.flatnonzero(~agree)
    return int(idx[0]) if len(idx) else None


def percentiles(values: np.ndarray) -> dict[str, float]:
    """Mean, max, min, median and PERCENTILES as `p99.9` ... `p0.1` (numpy's linear
    interpolation at fraction * (n - 1): llama.cpp's `percentile`)."""
    v = np.asarray(values, dtype=np.float64)
    pts = np.percentile(v, PERCENTILES)
    out = {"mean": float(v.mean()), "max": float(v.max()), "min": float(v.min())}
    for p, x in zip(PERCENTILES, pts, strict=True):
        out[f"p{p:g}"] = float(x)
    out["median"] = out["p50"]
    return out
