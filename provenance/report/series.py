"""Per-position series made small enough for a page: peak-keeping decimation.

A 100k-position comparison cannot ship every point and stay small, but a single large KL
spike or an isolated disagreement is exactly what a reader looks for, so buckets keep their
minimum and maximum (at their true positions), never an average that would hide a peak.
"""

from __future__ import annotations

import numpy as np

MAX_POINTS = 6000  # per series; ~2 points per bucket
RATE_BUCKETS = 2000  # buckets of the disagreement-rate series
MAX_MARKS = 50000  # disagreement positions listed one by one


def peak_indices(values: np.ndarray, max_points: int | None = None) -> np.ndarray:
    """Sorted indices to keep: all of them if few, else each bucket's argmin and argmax."""
    max_points = MAX_POINTS if max_points is None else max_points
    v = np.asarray(values, dtype=np.float64)
    n = len(v)
    if n <= max_points:
        return np.arange(n)
    buckets = max(max_points // 2, 1)
    size = -(-n // buckets)
    padded = np.full(buckets * size, np.nan)
    padded[:n] = np.where(np.isfinite(v), v, np.nan)
    rows = padded.reshape(buckets, size)
    valid = ~np.all(np.isnan(rows), axis=1)
    filled_hi = np.where(np.isnan(rows), -np.inf, rows)
    filled_lo = np.where(np.isnan(rows), np.inf, rows)
    base = np.arange(buckets) * size
    hi = base + np.argmax(filled_hi, axis=1)
    lo = base + np.argmin(filled_lo, axis=1)
    keep = np.concatenate([hi[valid], lo[valid], [0, n - 1]])
    return np.unique(keep[keep < n])


def bucket_rate(flags: np.ndarray,
                buckets: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(bucket start positions, fraction of True per bucket) over contiguous buckets."""
    buckets = RATE_BUCKETS if buckets is None else buckets
    f = np.asarray(flags, dtype=np.float64)
    n = len(f)
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    size = max(-(-n // buckets), 1)
    starts = np.arange(0, n, size)
    sums = np.add.reduceat(f, starts)
    counts = np.diff(np.append(starts, n))
    return starts, sums / counts


def round_sig(values: np.ndarray, digits: int = 4) -> list[float]:
    """JSON-friendly floats with `digits` significant digits (the page shows no more)."""
    out = []
    for v in np.asarray(values, dtype=np.float64).tolist():
        out.append(float(f"{v:.{digits}g}") if np.isfinite(v) else None)
    return out
