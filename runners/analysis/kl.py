"""Per-position statistics: top-1 agreement, margin, KL both ways, Delta-p of the next token,
the reference's top-1 probability, the next token's log-probability on each side, and the
ordered top-10 lists' agreement depth and label ranks (runners/analysis/topk.py).

Rows are processed in chunks so a 150k vocabulary over 100k positions never needs the whole
float64 matrix at once. Inputs are logits or log-probabilities (renormalised here in float64
either way, so both engines are treated alike). NaN marks entries an engine did not return
(top-k only); then KL is the truncated estimate over the ids both returned plus one bucket
for the residual mass, and `truncated` says so per position.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from runners.analysis.topk import K_MAX, agree_depth, label_rank, top_ids

# Rows per chunk so one float64 chunk stays near 2 MiB: big enough to amortise numpy's
# per-call overhead, small enough to stay in cache (measured in bench/bench_analysis.py).
CHUNK_CELLS = 1 << 18


@dataclass
class PositionStats:
    ref_top1: np.ndarray  # int64 [T]
    cand_top1: np.ndarray  # int64 [T]
    agree: np.ndarray  # bool [T]
    margin: np.ndarray  # float64 [T]: ref p(top1) - p(top2), a near-tie is not an error
    kl_ref_cand: np.ndarray  # float64 [T]: KL(P_ref || P_cand), nats
    kl_cand_ref: np.ndarray  # float64 [T]: KL(P_cand || P_ref), nats
    delta_p: np.ndarray  # float64 [T]: p_cand(next) - p_ref(next); NaN: next not stored
    ref_logp_next: np.ndarray  # float64 [T]; NaN where the engine did not return it
    cand_logp_next: np.ndarray  # float64 [T]; NaN likewise
    truncated: np.ndarray  # bool [T]
    ref_p_top1: np.ndarray  # float64 [T]: the reference's probability of its top-1 token
    top_agree_depth: np.ndarray  # int8 [T]: leading slots of the ordered top-10 lists equal
    ref_label_rank: np.ndarray  # int8 [T]: the next token's slot in the ref's top-10 (10: not)
    cand_label_rank: np.ndarray  # int8 [T]: likewise for the candidate
    ref_stored: np.ndarray  # int32 [T]: entries the reference returned (V when full)
    cand_stored: np.ndarray  # int32 [T]

    def __len__(self) -> int:
        return len(self.agree)


def _log_softmax(x: np.ndarray) -> np.ndarray:
    """Row-wise log-softmax in float64. Rows with NaN (top-k only) are already
    log-probabilities over the full vocabulary and are kept as they are: renormalising the
    stored top-k would hide the residual mass."""
    x = x.astype(np.float64)
    partial = np.isnan(x).any(axis=1)
    if not partial.any():  # the common case, without extra copies
        x -= x.max(axis=1, keepdims=True)
        x -= np.log(np.exp(x).sum(axis=1, keepdims=True))
        return x
    full = x[~partial]
    if len(full):
        m = full.max(axis=1, keepdims=True)
        x[~partial] = full - m - np.log(np.exp(full - m).sum(axis=1, keepdims=True))
    return x


def _kl(lp: np.ndarray, lq: np.ndarray) -> np.ndarray:
    """Row-wise KL(P||Q) over full rows; 0 * log 0 = 0."""
    p = np.exp(lp)
    terms = np.where(p > 0, p * (lp - lq), 0.0)
    return terms.sum(axis=1)


def _kl_truncated(lp: np.ndarray, lq: np.ndarray) -> np.ndarray:
    """KL over ids both returned plus one residual bucket (1 - stored mass) on each side."""
    both = ~np.isnan(lp) & ~np.isnan(lq)
    p = np.where(both, np.exp(np.where(both, lp, 0.0)), 0.0)
    q = np.where(both, np.exp(np.where(both, lq, 0.0)), 0.0)
    safe = both & (p > 0)
    head = np.where(safe, p * (np.where(safe, lp, 0) - np.where(safe, lq, 0)), 0.0).sum(axis=1)
    pr = np.clip(1.0 - p.sum(axis=1), 0.0, 1.0)
    qr = np.clip(1.0 - q.sum(axis=1), 1e-300, 1.0)
    tail = np.where(pr > 0, pr * (np.log(np.maximum(pr, 1e-300)) - np.log(qr)), 0.0)
    return head + tail


def _lists(ref: np.ndarray, cand: np.ndarray, nxt: np.ndarray, out: dict,
           sl: slice) -> tuple[np.ndarray, np.ndarray]:
    """The ordered top-10 lists of a chunk (on the raw scores: the order of the
    log-probabilities), their agreement depth and the label's rank on each side."""
    tr, tc = top_ids(ref, K_MAX), top_ids(cand, K_MAX)
    out["depth"][sl] = agree_depth(tr, tc)
    out["rank_r"][sl], out["rank_c"][sl] = label_rank(tr, nxt), label_rank(tc, nxt)
    return tr, tc


def _full_chunk(ref: np.ndarray, cand: np.ndarray, nxt: np.ndarray, out: dict,
                r1: np.ndarray, c1: np.ndarray, sl: slice) -> None:
    """The hot path (full vocabulary, no NaN): one exp per side, probabilities reused."""
    rows = np.arange(len(ref))
    tr, tc = _lists(ref, cand, nxt, out, sl)
    sides = []
    for x in (ref, cand):
        x = x.astype(np.float64)
        x -= x.max(axis=1, keepdims=True)
        ex = np.exp(x)
        z = ex.sum(axis=1, keepdims=True)
        x -= np.log(z)  # log-probabilities
        ex /= z  # probabilities
        sides.append((x, ex))
    (lr, p), (lc, q) = sides
    d = lr - lc
    if np.isfinite(d).all():
        out["kl_rc"][sl] = np.einsum("ij,ij->i", p, d)
        out["kl_cr"][sl] = -np.einsum("ij,ij->i", q, d)
    else:  # -inf logits: 0 * log 0 counts as 0
        out["kl_rc"][sl] = np.where(p > 0, p * np.where(p > 0, d, 0.0), 0.0).sum(axis=1)
        out["kl_cr"][sl] = -np.where(q > 0, q * np.where(q > 0, d, 0.0), 0.0).sum(axis=1)
    r1[sl], c1[sl] = tr[:, 0], tc[:, 0]  # argmax: the first index of the maximum
    p1 = p[rows, tr[:, 0]]
    out["p1"][sl] = p1
    out["margin"][sl] = p1 - p[rows, tr[:, 1]] if p.shape[1] > 1 else p1
    out["lpr"][sl], out["lpc"][sl] = lr[rows, nxt], lc[rows, nxt]


def position_stats(ref: np.ndarray, cand: np.ndarray, next_ids: np.ndarray) -> PositionStats:
    """Statistics for each row j of ref/cand ([T, V]) against the actual next token next_ids[j]."""
    if ref.shape != cand.shape:
        raise ValueError(f"reference {ref.shape} and candidate {cand.shape} differ in shape")
    if len(next_ids) != len(ref):
        raise ValueError("next_ids must have one token per row")
    t, v = ref.shape
    out = {name: np.empty(t, dtype=np.float64) for name in
           ("margin", "kl_rc", "kl_cr", "dp", "lpr", "lpc", "p1")}
    out.update({name: np.empty(t, dtype=np.int8) for name in ("depth", "rank_r", "rank_c")})
    stored = {side: np.full(t, v, dtype=np.int32) for side in ("ref", "cand")}
    r1 = np.empty(t, dtype=np.int64)
    c1 = np.empty(t, dtype=np.int64)
    trunc = np.empty(t, dtype=bool)
    rows = np.arange(t)
    chunk = max(1, CHUNK_CELLS // max(ref.shape[1], 1))
    any_nan = bool(np.isnan(ref).any() or np.isnan(cand).any())  # one pass, not per chunk
    for s in range(0, t, chunk):
        e = min(s + chunk, t)
        sl = slice(s, e)
        if not any_nan:
            _full_chunk(ref[sl], cand[sl], next_ids[sl], out, r1, c1, sl)
            trunc[sl] = False
            continue
        lr, lc = _log_softmax(ref[sl]), _log_softmax(cand[sl])
        tr = np.isnan(lr).any(axis=1) | np.isnan(lc).any(axis=1)
        trunc[sl] = tr
        stored["ref"][sl], stored["cand"][sl] = (~np.isnan(lr)).sum(1), (~np.isnan(lc)).sum(1)
        fr = np.where(np.isnan(lr), -np.inf, lr)
        ir, ic = _lists(ref[sl], cand[sl], next_ids[sl], out, sl)
        r1[sl], c1[sl] = ir[:, 0], ic[:, 0]
        r = rows[: e - s]
        top2 = np.where(ir[:, :2] >= 0, fr[r[:, None], np.maximum(ir[:, :2], 0)], -np.inf)
        out["p1"][sl] = np.exp(top2[:, 0])
        out["margin"][sl] = np.exp(top2[:, 0]) - np.exp(top2[:, 1])
        kl_rc, kl_cr = np.empty(e - s), np.empty(e - s)
        full = ~tr
        if full.any():
            kl_rc[full], kl_cr[full] = _kl(lr[full], lc[full]), _kl(lc[full], lr[full])
        if tr.any():
            kl_rc[tr] = _kl_truncated(lr[tr], lc[tr])
            kl_cr[tr] = _kl_truncated(lc[tr], lr[tr])
        out["kl_rc"][sl], out["kl_cr"][sl] = kl_rc, kl_cr
        # NaN (not -inf) where the next token was not returned: its probability is unknown
        out["lpr"][sl], out["lpc"][sl] = lr[r, next_ids[sl]], lc[r, next_ids[sl]]
    out["dp"] = np.exp(out["lpc"]) - np.exp(out["lpr"])
    return PositionStats(
        ref_top1=r1, cand_top1=c1, agree=r1 == c1, margin=out["margin"],
        kl_ref_cand=out["kl_rc"], kl_cand_ref=out["kl_cr"], delta_p=out["dp"],
        ref_logp_next=out["lpr"], cand_logp_next=out["lpc"], truncated=trunc,
        ref_p_top1=out["p1"], top_agree_depth=out["depth"], ref_label_rank=out["rank_r"],
        cand_label_rank=out["rank_c"], ref_stored=stored["ref"], cand_stored=stored["cand"],
    )


def self_kl_floor(scores: np.ndarray, storage_dtype: str) -> dict[str, float | None]:
    """KL between scores and their round trip through the storage dtype: the floor below
    which a reported KL says nothing about the engines. None (not NaN, which is no JSON)
    when no position holds the full vocabulary (top-k storage)."""
    stored = scores.astype(storage_dtype).astype(np.float64)
    fin = ~np.isnan(scores).any(axis=1)
    if not fin.any():
        return {"mean": None, "max": None}
    kl = _kl(_log_softmax(scores[fin]), _log_softmax(stored[fin]))
    return {"mean": float(kl.mean()), "max": float(kl.max())}


def kl_rows(p_scores: np.ndarray, q_scores: np.ndarray) -> np.ndarray:
    """Row-wise KL(P||Q) in float64 of two full-vocabulary score arrays (logits or
    log-probabilities, renormalised here)."""
    return _kl(_log_softmax(p_scores), _log_softmax(q_scores))
