"""The fused analysis kernel's earlier variants, kept for the bench as baselines (same
outputs as runners/gpu/kernels.py:stats_online_kernel): `stats_kernel` reduces over the
block every BLOCK_V logits; `stats_lanes_kernel` keeps per-lane sums but reduces the two block
maxima every block. Measured slower on an H200 (bench/results, "fused_lanes_*")."""

from __future__ import annotations

import triton
import triton.language as tl

from runners.gpu.kernels import _store_row


@triton.jit
def stats_kernel(r_ptr, c_ptr, nxt_ptr, out_f_ptr, out_i_ptr, V, stride_r, stride_c,
                 HAS_NEXT: tl.constexpr, BLOCK_V: tl.constexpr):
    """One row (position) per program; each logit of both sides is loaded once.

    Online, max-rescaled sums over the vocabulary, in fp32:
      s_r = sum exp(r - m_r), t_r = sum exp(r - m_r) * (r - c)   (same for c with r, c swapped)
    then lse = m + log s, KL(P_r||P_c) = t_r / s_r - lse_r + lse_c. Top-1 keeps the first
    index of the maximum (torch.argmax's rule); the reference's second value gives the margin.
    """
    row = tl.program_id(0).to(tl.int64)
    rp = r_ptr + row * stride_r
    cp = c_ptr + row * stride_c
    offs = tl.arange(0, BLOCK_V)
    neg = float("-inf")
    m_r = tl.full([], neg, tl.float32)
    m_c = tl.full([], neg, tl.float32)
    v2_r = tl.full([], neg, tl.float32)
    s_r = tl.zeros([], tl.float32)
    s_c = tl.zeros([], tl.float32)
    t_r = tl.zeros([], tl.float32)
    t_c = tl.zeros([], tl.float32)
    i_r = tl.zeros([], tl.int32)
    i_c = tl.zeros([], tl.int32)
    for v0 in range(0, V, BLOCK_V):
        idx = v0 + offs
        msk = idx < V
        r = tl.load(rp + idx, mask=msk, other=neg).to(tl.float32)
        c = tl.load(cp + idx, mask=msk, other=neg).to(tl.float32)
        # top-1 (first index among equal maxima) and the reference's runner-up value
        bm_r, bi_r = tl.max(r, axis=0, return_indices=True, return_indices_tie_break_left=True)
        bm_c, bi_c = tl.max(c, axis=0, return_indices=True, return_indices_tie_break_left=True)
        b2_r = tl.max(tl.where(idx == v0 + bi_r, neg, r), axis=0)
        v2_r = tl.maximum(tl.minimum(m_r, bm_r), tl.maximum(v2_r, b2_r))
        i_r = tl.where(bm_r > m_r, v0 + bi_r, i_r)
        i_c = tl.where(bm_c > m_c, v0 + bi_c, i_c)
        nm_r = tl.maximum(m_r, bm_r)
        nm_c = tl.maximum(m_c, bm_c)
        # rescale what was summed so far to the new maxima (m = -inf only before any data)
        a_r = tl.where(m_r == neg, 0.0, tl.exp(m_r - nm_r))
        a_c = tl.where(m_c == neg, 0.0, tl.exp(m_c - nm_c))
        e_r = tl.where(r > neg, tl.exp(r - nm_r), 0.0)  # masked lanes and -inf logits: 0
        e_c = tl.where(c > neg, tl.exp(c - nm_c), 0.0)
        # 0 * log 0 = 0: a term counts only where its weight is non-zero
        s_r = s_r * a_r + tl.sum(e_r, axis=0)
        s_c = s_c * a_c + tl.sum(e_c, axis=0)
        t_r = t_r * a_r + tl.sum(tl.where(e_r > 0, e_r * (r - c), 0.0), axis=0)
        t_c = t_c * a_c + tl.sum(tl.where(e_c > 0, e_c * (c - r), 0.0), axis=0)
        m_r = nm_r
        m_c = nm_c
    lse_r = m_r + tl.log(s_r)
    lse_c = m_c + tl.log(s_c)
    kl_rc = t_r / s_r - lse_r + lse_c
    kl_cr = t_c / s_c - lse_c + lse_r
    margin = (1.0 - tl.exp(v2_r - m_r)) / s_r
    _store_row(rp, cp, nxt_ptr, out_f_ptr, out_i_ptr, row, lse_r, lse_c, kl_rc, kl_cr, margin,
               i_r, i_c, HAS_NEXT)


@triton.jit
def stats_lanes_kernel(r_ptr, c_ptr, nxt_ptr, out_f_ptr, out_i_ptr, V, stride_r, stride_c,
                       HAS_NEXT: tl.constexpr, BLOCK_V: tl.constexpr):
    """Same outputs as stats_kernel with fewer block-wide reductions: sums, top-1 and the
    reference's runner-up are kept per lane and reduced once at the end; each block needs
    only the two maxima (the shared rescaling offsets)."""
    row = tl.program_id(0).to(tl.int64)
    rp = r_ptr + row * stride_r
    cp = c_ptr + row * stride_c
    offs = tl.arange(0, BLOCK_V)
    neg = float("-inf")
    m_r = tl.full([], neg, tl.float32)
    m_c = tl.full([], neg, tl.float32)
    s_r = tl.zeros([BLOCK_V], tl.float32)
    s_c = tl.zeros([BLOCK_V], tl.float32)
    t_r = tl.zeros([BLOCK_V], tl.float32)
    t_c = tl.zeros([BLOCK_V], tl.float32)
    b1_r = tl.full([BLOCK_V], neg, tl.float32)
    b2_r = tl.full([BLOCK_V], neg, tl.float32)
    b1_c = tl.full([BLOCK_V], neg, tl.float32)
    i1_r = tl.zeros([BLOCK_V], tl.int32)
    i1_c = tl.zeros([BLOCK_V], tl.int32)
    for v0 in range(0, V, BLOCK_V):
        idx = v0 + offs
        msk = idx < V
        r = tl.load(rp + idx, mask=msk, other=neg).to(tl.float32)
        c = tl.load(cp + idx, mask=msk, other=neg).to(tl.float32)
        nm_r = tl.maximum(m_r, tl.max(r, axis=0))
        nm_c = tl.maximum(m_c, tl.max(c, axis=0))
        a_r = tl.where(m_r == neg, 0.0, tl.exp(m_r - nm_r))
        a_c = tl.where(m_c == neg, 0.0, tl.exp(m_c - nm_c))
        e_r = tl.where(r > neg, tl.exp(r - nm_r), 0.0)
        e_c = tl.where(c > neg, tl.exp(c - nm_c), 0.0)
        s_r = s_r * a_r + e_r
        s_c = s_c * a_c + e_c
        t_r = t_r * a_r + tl.where(e_r > 0, e_r * (r - c), 0.0)
        t_c = t_c * a_c + tl.where(e_c > 0, e_c * (c - r), 0.0)
        # per lane: strictly greater replaces (so the earliest index of a maximum stays)
        gt = r > b1_r
        b2_r = tl.where(gt, b1_r, tl.maximum(b2_r, r))
        i1_r = tl.where(gt, idx, i1_r)
        b1_r = tl.where(gt, r, b1_r)
        gtc = c > b1_c
        i1_c = tl.where(gtc, idx, i1_c)
        b1_c = tl.where(gtc, c, b1_c)
        m_r = nm_r
        m_c = nm_c
    big = 2147483647
    v1_r = tl.max(b1_r, axis=0)
    top_r = tl.min(tl.where(b1_r == v1_r, i1_r, big), axis=0)
    v1_c = tl.max(b1_c, axis=0)
    top_c = tl.min(tl.where(b1_c == v1_c, i1_c, big), axis=0)
    win = (i1_r == top_r) & (b1_r == v1_r)
    v2_r = tl.maximum(tl.max(tl.where(win, neg, b1_r), axis=0),
                      tl.max(tl.where(win, b2_r, neg), axis=0))
    sr = tl.sum(s_r, axis=0)
    sc = tl.sum(s_c, axis=0)
    lse_r = m_r + tl.log(sr)
    lse_c = m_c + tl.log(sc)
    kl_rc = tl.sum(t_r, axis=0) / sr - lse_r + lse_c
    kl_cr = tl.sum(t_c, axis=0) / sc - lse_c + lse_r
    margin = (1.0 - tl.exp(v2_r - v1_r)) * tl.exp(v1_r - lse_r)
    _store_row(rp, cp, nxt_ptr, out_f_ptr, out_i_ptr, row, lse_r, lse_c, kl_rc, kl_cr, margin,
               top_r, top_c, HAS_NEXT)
