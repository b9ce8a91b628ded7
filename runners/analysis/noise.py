"""The noise floor: the reference against a second execution of its own configuration, on
the same positions, with the same statistics' key figures.

A published KV-cache sweep found a nonzero KL between FP16 and FP16 itself (a fused MoE
path): a KL between two configurations says something only above what the reference gives
against itself. Positions whose scores are bit-identical contribute exactly 0 (they are not
analysed at all); only the differing ones are, so a deterministic reference costs one byte
comparison, and a non-deterministic one is measured.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from runners.analysis.kl import CHUNK_CELLS, position_stats


def _chunks(t: int, v: int):
    step = max(1, CHUNK_CELLS // max(v, 1))
    for s in range(0, t, step):
        yield slice(s, min(s + step, t))


def same_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """bool [T]: rows whose bytes are identical (NaN where NaN, -0.0 is not 0.0)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        raise ValueError(f"the repeat's scores {b.shape} {b.dtype} do not match the "
                         f"reference's {a.shape} {a.dtype}")
    t = len(a)
    ra = np.ascontiguousarray(a).view(np.uint8).reshape(t, -1)
    rb = np.ascontiguousarray(b).view(np.uint8).reshape(t, -1)
    out = np.empty(t, dtype=bool)
    for sl in _chunks(t, ra.shape[1]):
        out[sl] = (ra[sl] == rb[sl]).all(axis=1)
    return out


def _max_abs_delta(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row: max |a - b| (float64) over entries both stored, and whether one stored an
    id the other did not (top-k storage)."""
    d = a.astype(np.float64)
    d -= b
    np.abs(d, out=d)
    na, nb = np.isnan(a), np.isnan(b)
    if not (na.any() or nb.any()):
        return d.max(axis=1), np.zeros(len(a), dtype=bool)
    return np.where(na | nb, 0.0, d).max(axis=1), (na != nb).any(axis=1)


def floor_figures(same: np.ndarray, kl_rc: np.ndarray, kl_cr: np.ndarray, agree: np.ndarray,
                  delta: np.ndarray, compared: str, **extra: Any) -> dict[str, Any]:
    """The floor's key figures over all T positions, from the values at the differing rows
    (kl_rc, kl_cr, agree, delta: one entry per False in `same`; 0 / agreeing elsewhere)."""
    t = len(same)
    full = {k: np.zeros(t) for k in ("rc", "cr", "delta")}
    ok = np.ones(t, dtype=bool)
    diff = ~same
    full["rc"][diff], full["cr"][diff], full["delta"][diff], ok[diff] = kl_rc, kl_cr, delta, agree

    def kl(v: np.ndarray) -> dict[str, float]:
        return {"mean": float(v.mean()), "p99": float(np.percentile(v, 99)),
                "max": float(v.max())}

    return {"positions": t, "bit_identical_positions": int(same.sum()),
            "bit_identical": bool(same.all()), "top1_agreement": float(ok.mean()),
            "disagreements": int((~ok).sum()), "kl_ref_cand": kl(full["rc"]),
            "kl_cand_ref": kl(full["cr"]), "max_abs_logit_delta": float(full["delta"].max()),
            "compared": compared, **extra}


def noise_floor(ref: np.ndarray, repeat: np.ndarray, next_ids: np.ndarray) -> dict[str, Any]:
    """Reference scores [T, V] against its repeat's on the same positions (the same
    statistics as the divergence; `kl_ref_cand` is KL(P_ref || P_repeat)). The differing
    rows are analysed a chunk at a time: no copy of the whole matrix."""
    same = same_rows(ref, repeat)
    diff = np.flatnonzero(~same)
    parts: dict[str, list[np.ndarray]] = {k: [] for k in ("rc", "cr", "agree", "delta", "one")}
    step = max(1, CHUNK_CELLS // max(ref.shape[1], 1))
    for s in range(0, len(diff), step):
        rows = diff[s:s + step]
        a, b = ref[rows], repeat[rows]
        st = position_stats(a, b, np.asarray(next_ids)[rows])
        delta, one_sided = _max_abs_delta(a, b)
        for k, v in (("rc", st.kl_ref_cand), ("cr", st.kl_cand_ref), ("agree", st.agree),
                     ("delta", delta), ("one", one_sided)):
            parts[k].append(v)
    cat = {k: np.concatenate(v) if v else np.zeros(0) for k, v in parts.items()}
    return floor_figures(same, cat["rc"], cat["cr"], cat["agree"].astype(bool), cat["delta"],
                         "the scores each run returned (logits or log-probabilities)",
                         one_sided_positions=int(cat["one"].astype(bool).sum()))
