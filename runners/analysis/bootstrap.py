"""Block-bootstrap confidence intervals: neighbouring positions are correlated, so resample
contiguous blocks of positions rather than single positions."""

from __future__ import annotations

import numpy as np


def block_bootstrap_ci(values: np.ndarray, block: int = 32, n_boot: int = 1000,
                       level: float = 0.95, seed: int = 0) -> dict[str, float]:
    """Percentile CI of the mean of `values` by non-overlapping block resampling."""
    v = np.asarray(values, dtype=np.float64)
    nb = max(len(v) // block, 1)
    used = v[: nb * block] if len(v) >= block else v
    sums = used.reshape(nb, -1).sum(axis=1)
    per = used.size // nb
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, nb, size=(n_boot, nb))
    means = sums[picks].sum(axis=1) / (nb * per)
    lo, hi = np.quantile(means, [(1 - level) / 2, 1 - (1 - level) / 2])
    return {"mean": float(v.mean()), "lo": float(lo), "hi": float(hi), "level": level,
            "block": block, "n_boot": n_boot, "blocks": int(nb)}
