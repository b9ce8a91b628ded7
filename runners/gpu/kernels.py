"""The Triton kernels (module level, as triton.jit needs). Imported only when a kernel runs.

One analysis kernel (`stats_online_kernel`, the fastest that agrees with the torch reference
on an H200) and the digest kernel; the analysis kernel's earlier variants live in
bench/gpu/kernel_variants.py.

Constants are repeated from digest.py (kernels cannot read Python globals of other modules).
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _mix(z):
    # splitmix64 finaliser on uint64, wrapping multiplies
    z = z ^ (z >> 30)
    z = z * 0xBF58476D1CE4E5B9
    z = z ^ (z >> 27)
    z = z * 0x94D049BB133111EB
    return z ^ (z >> 31)


@triton.jit
def _mixes(idx, w, seed0, seed1):
    """Both lanes' terms for words w at in-block indices idx: splitmix64((idx << 32 | w) + seed)."""
    key = (idx.to(tl.uint64) << 32) | w.to(tl.uint32, bitcast=True).to(tl.uint64)
    return _mix(key + seed0), _mix(key + seed1)


@triton.jit
def digest_kernel(base_ptr, len_ptr, out_ptr, splits, seed0, seed1, CHUNK: tl.constexpr,
                  ALIGNED: tl.constexpr):
    """Block b's words are the int32 words at address base_ptr[b], len_ptr[b] of them (any
    number of tensors' blocks in one launch: per-tensor launches cost more host time than
    GPU time). Program (b, s) sums every splits-th chunk of CHUNK words; full chunks are
    unmasked, the one partial chunk is masked."""
    b = tl.program_id(0)
    s = tl.program_id(1)
    base = tl.load(base_ptr + b).to(tl.pointer_type(tl.int32))
    if ALIGNED:  # every block starts on 16 bytes and holds a multiple of 4 words
        base = tl.multiple_of(base, 16)
    n = tl.load(len_ptr + b)
    acc0 = tl.zeros([CHUNK], dtype=tl.uint64)
    acc1 = tl.zeros([CHUNK], dtype=tl.uint64)
    lane = tl.arange(0, CHUNK)
    off = s * CHUNK
    step = splits * CHUNK
    while off + CHUNK <= n:
        idx = off + lane
        z0, z1 = _mixes(idx, tl.load(base + idx), seed0, seed1)
        acc0 += z0
        acc1 += z1
        off += step
    if off < n:
        idx = off + lane
        m = idx < n
        z0, z1 = _mixes(idx, tl.load(base + idx, mask=m, other=0), seed0, seed1)
        acc0 += tl.where(m, z0, 0)
        acc1 += tl.where(m, z1, 0)
    o = (b.to(tl.int64) * splits + s) * 2
    tl.store(out_ptr + o, tl.sum(acc0, axis=0))
    tl.store(out_ptr + o + 1, tl.sum(acc1, axis=0))


@triton.jit
def _store_row(rp, cp, nxt_ptr, out_f_ptr, out_i_ptr, row, lse_r, lse_c, kl_rc, kl_cr, margin,
               top_r, top_c, HAS_NEXT: tl.constexpr):
    """Every stats kernel's epilogue: Delta-p of the next token (two more loads) and the
    row's outputs. KL is clamped at 0 (fp32 rounding can make identical rows' KL -1 ulp)."""
    dp = 0.0
    if HAS_NEXT:
        n = tl.load(nxt_ptr + row)
        rn = tl.load(rp + n).to(tl.float32)
        cn = tl.load(cp + n).to(tl.float32)
        dp = tl.exp(cn - lse_c) - tl.exp(rn - lse_r)
    o = out_f_ptr + row * 6
    tl.store(o, lse_r)
    tl.store(o + 1, lse_c)
    tl.store(o + 2, tl.maximum(kl_rc, 0.0))
    tl.store(o + 3, tl.maximum(kl_cr, 0.0))
    tl.store(o + 4, margin)
    tl.store(o + 5, dp)
    tl.store(out_i_ptr + row * 2, top_r)
    tl.store(out_i_ptr + row * 2 + 1, top_c)


@triton.jit
def _exp(x, FAST: tl.constexpr):
    """exp(x); FAST: one ex2.approx.ftz (results below 2^-126 flush to 0, which changes no
    sum here: every sum has a term of 1). tl.exp adds a denormal range fix-up around ex2,
    3 more instructions per logit. The Triton interpreter (CPU tests) has no inline asm."""
    if FAST:
        return tl.inline_asm_elementwise("ex2.approx.ftz.f32 $0, $1;", "=f,f",
                                         [x * 1.4426950408889634], dtype=tl.float32,
                                         is_pure=True, pack=1)
    else:
        return tl.exp(x)


@triton.jit
def _online(x, d, m, s, t, it, b2, v0, SECOND: tl.constexpr, NEG: tl.constexpr,
            FAST: tl.constexpr):
    """One side's per-lane online update with a single exp per logit.

    Per lane: m = running maximum (starts at -FLT_MAX, so -inf logits never make a NaN),
    s = sum exp(x - m), t = sum exp(x - m) * (x - y) with d = r - c shared by both sides
    (x - y = d for the reference, -d for the candidate: NEG), it = block start where m was
    first seen (the lane's index is it + lane), b2 = runner-up. A new maximum rescales what
    was summed by exp(m_old - x) and weighs itself 1; any other logit weighs exp(x - m).
    Both are exp(-|x - m|): one exp, no block-wide reduction.
    """
    gt = x > m
    e = _exp(-tl.abs(x - m), FAST)
    a = tl.where(gt, e, 1.0)  # rescale of what was summed so far
    w = tl.where(gt, 1.0, e)  # this logit's weight
    s = s * a + w
    # 0 * log 0 = 0: a term counts only where its weight is non-zero (x or y may be -inf)
    term = tl.where(w > 0, w * d, 0.0)
    if NEG:  # noqa: SIM108 (a constexpr branch: Triton compiles only one side)
        t = t * a - term
    else:
        t = t * a + term
    it = tl.where(gt, v0, it)
    if SECOND:
        b2 = tl.where(gt, m, tl.maximum(b2, x))
    m = tl.maximum(m, x)
    return m, s, t, it, b2


@triton.jit
def stats_online_kernel(r_ptr, c_ptr, nxt_ptr, out_f_ptr, out_i_ptr, V, stride_r, stride_c,
                        HAS_NEXT: tl.constexpr, BLOCK_V: tl.constexpr, FAST: tl.constexpr):
    """Per-position comparison of two logit rows (outputs: runners/gpu/fused.py): per-lane
    online sums with one exp per logit and no block-wide reduction inside the loop (lanes
    are combined once per row). Full blocks are
    loaded without a partial mask, the last partial block separately. The next block's loads
    are issued before the current block's arithmetic (register double-buffering: twice the
    bytes in flight per thread, what a memory-bound loop lacks)."""
    row = tl.program_id(0).to(tl.int64)
    rp = r_ptr + row * stride_r
    cp = c_ptr + row * stride_c
    offs = tl.arange(0, BLOCK_V)
    lowest = -3.4028234663852886e38
    neg = float("-inf")
    m_r = tl.full([BLOCK_V], lowest, tl.float32)
    m_c = tl.full([BLOCK_V], lowest, tl.float32)
    b2_r = tl.full([BLOCK_V], neg, tl.float32)
    s_r = tl.zeros([BLOCK_V], tl.float32)
    s_c = tl.zeros([BLOCK_V], tl.float32)
    t_r = tl.zeros([BLOCK_V], tl.float32)
    t_c = tl.zeros([BLOCK_V], tl.float32)
    it_r = tl.zeros([BLOCK_V], tl.int32)
    it_c = tl.zeros([BLOCK_V], tl.int32)
    v_full = (V // BLOCK_V) * BLOCK_V
    r_next = tl.load(rp + offs, mask=offs < v_full, other=neg)
    c_next = tl.load(cp + offs, mask=offs < v_full, other=neg)
    for v0 in range(0, v_full, BLOCK_V):
        r = r_next.to(tl.float32)
        c = c_next.to(tl.float32)
        nidx = v0 + BLOCK_V + offs
        r_next = tl.load(rp + nidx, mask=nidx < v_full, other=neg)
        c_next = tl.load(cp + nidx, mask=nidx < v_full, other=neg)
        d = r - c
        m_r, s_r, t_r, it_r, b2_r = _online(r, d, m_r, s_r, t_r, it_r, b2_r, v0, True,
                                            False, FAST)
        m_c, s_c, t_c, it_c, b2_r = _online(c, d, m_c, s_c, t_c, it_c, b2_r, v0, False,
                                            True, FAST)
    if v_full < V:
        idx = v_full + offs
        msk = idx < V
        r = tl.load(rp + idx, mask=msk, other=neg).to(tl.float32)
        c = tl.load(cp + idx, mask=msk, other=neg).to(tl.float32)
        d = r - c
        m_r, s_r, t_r, it_r, b2_r = _online(r, d, m_r, s_r, t_r, it_r, b2_r, v_full, True,
                                            False, FAST)
        m_c, s_c, t_c, it_c, b2_r = _online(c, d, m_c, s_c, t_c, it_c, b2_r, v_full, False,
                                            True, FAST)
    # combine the lanes: rescale every lane's sums to the row maximum
    big = 2147483647
    i_r = it_r + offs
    i_c = it_c + offs
    v1_r = tl.max(m_r, axis=0)
    v1_c = tl.max(m_c, axis=0)
    f_r = tl.exp(m_r - v1_r)
    f_c = tl.exp(m_c - v1_c)
    sr = tl.sum(s_r * f_r, axis=0)
    sc = tl.sum(s_c * f_c, axis=0)
    tr = tl.sum(tl.where(s_r > 0, t_r * f_r, 0.0), axis=0)
    tc = tl.sum(tl.where(s_c > 0, t_c * f_c, 0.0), axis=0)
    top_r = tl.min(tl.where(m_r == v1_r, i_r, big), axis=0)
    top_c = tl.min(tl.where(m_c == v1_c, i_c, big), axis=0)
    win = (i_r == top_r) & (m_r == v1_r)
    v2_r = tl.maximum(tl.max(tl.where(win, neg, m_r), axis=0),
                      tl.max(tl.where(win, b2_r, neg), axis=0))
    lse_r = v1_r + tl.log(sr)
    lse_c = v1_c + tl.log(sc)
    # lse_r - lse_c without subtracting two values of about log V (one fp32 ulp of log
    # 151,936 is 1e-6, the size of the KLs measured): the maxima's difference plus
    # log(sr / sc) = log1p(x), x = (sr - sc) / sc (exactly 0 for identical rows, where an
    # approximate sr / sc can miss 1 by an ulp); a 3-term series below |x| = 1e-3 (error
    # < x^4 / 4)
    x = (sr - sc) / sc
    l1p = tl.where(tl.abs(x) < 1e-3, x * (1.0 - x * (0.5 - x * 0.3333333333333333)),
                   tl.log(1.0 + x))
    d_lse = (v1_r - v1_c) + l1p
    kl_rc = tr / sr - d_lse
    kl_cr = tc / sc + d_lse
    margin = (1.0 - tl.exp(v2_r - v1_r)) * tl.exp(v1_r - lse_r)
    _store_row(rp, cp, nxt_ptr, out_f_ptr, out_i_ptr, row, lse_r, lse_c, kl_rc, kl_cr, margin,
               top_r, top_c, HAS_NEXT)
