"""Per-position comparison of two logit tensors [positions, vocab] (bf16/fp16/fp32) on device.

Both implementations return the same dict of tensors (on the input's device):
  ref_top1, cand_top1 (int64; first index of the maximum, as torch.argmax),
  lse_ref, lse_cand (logsumexp), kl_ref_cand = KL(P_ref||P_cand), kl_cand_ref (nats),
  margin (reference p(top1) - p(top2)), delta_p (p_cand - p_ref of the next token; 0 without
  next_ids) — all fp32. KL is clamped at 0 in both (fp32 rounding can make a KL of identical
  rows a few ulps negative).

`analyse_torch` is the plain reference (log_softmax per chunk of rows, then KL and argmax);
`analyse_fused` is one Triton pass that reads each logit once.
"""

from __future__ import annotations

import os
from typing import Any

FIELDS = ("lse_ref", "lse_cand", "kl_ref_cand", "kl_cand_ref", "margin", "delta_p")


def _check(ref, cand, next_ids) -> None:
    if ref.shape != cand.shape or ref.dim() != 2:
        raise ValueError(f"need two [positions, vocab] tensors, got {tuple(ref.shape)} "
                         f"and {tuple(cand.shape)}")
    if next_ids is not None and next_ids.shape != (ref.shape[0],):
        raise ValueError("next_ids must hold one token id per position")


def analyse_torch(ref, cand, next_ids=None, chunk_rows: int = 1024) -> dict[str, Any]:
    """Reference: fp32 log_softmax per chunk of rows, KL as sum p * (log p - log q)."""
    import torch

    _check(ref, cand, next_ids)
    n = ref.shape[0]
    out = {k: torch.empty(n, dtype=torch.float32, device=ref.device) for k in FIELDS}
    top = {k: torch.empty(n, dtype=torch.int64, device=ref.device)
           for k in ("ref_top1", "cand_top1")}
    for s in range(0, n, chunk_rows):
        sl = slice(s, min(s + chunk_rows, n))
        part = _chunk(ref[sl], cand[sl], None if next_ids is None else next_ids[sl])
        for k, v in part.items():
            (top if k in top else out)[k][sl] = v
    return {**top, **out}


def _chunk(r, c, nxt) -> dict[str, Any]:
    import torch

    rf, cf = r.float(), c.float()
    lse_r = torch.logsumexp(rf, dim=1)
    lse_c = torch.logsumexp(cf, dim=1)
    lr = rf - lse_r[:, None]
    lc = cf - lse_c[:, None]
    p, q = lr.exp(), lc.exp()
    d = lr - lc
    kl_rc = torch.where(p > 0, p * d, 0.0).sum(1).clamp_min(0)
    kl_cr = torch.where(q > 0, -q * d, 0.0).sum(1).clamp_min(0)
    top2 = rf.topk(2, dim=1).values
    margin = (1 - (top2[:, 1] - top2[:, 0]).exp()) * (top2[:, 0] - lse_r).exp()
    if nxt is None:
        dp = torch.zeros_like(lse_r)
    else:
        rows = torch.arange(len(rf), device=rf.device)
        dp = q[rows, nxt] - p[rows, nxt]
    return {"ref_top1": rf.argmax(1), "cand_top1": cf.argmax(1), "lse_ref": lse_r,
            "lse_cand": lse_c, "kl_ref_cand": kl_rc, "kl_cand_ref": kl_cr, "margin": margin,
            "delta_p": dp}


def analyse_fused(ref, cand, next_ids=None, block_v: int = 512, num_warps: int = 2,
                  num_stages: int | None = None, variant: str = "online",
                  prefetch: bool = True) -> dict[str, Any]:
    """One Triton pass over both tensors (rows must be contiguous along the vocabulary).

    Defaults: the fastest configuration measured on an H200 (bench/results/2026-11-30-h200/
    bench.md). variant "online" (the default): per-lane online sums with one exp per
    logit, lanes combined once per row; "block": block-wide reductions every BLOCK_V logits;
    "lanes": per-lane sums with the two block maxima reduced every BLOCK_V. Same outputs.
    `prefetch` (online only) loads the next block before the current block's arithmetic."""
    import torch

    from runners.gpu import kernels

    _check(ref, cand, next_ids)
    if ref.stride(1) != 1 or cand.stride(1) != 1:
        raise ValueError("logit rows must be contiguous along the vocabulary")
    n, v = ref.shape
    out_f = torch.empty((n, 6), dtype=torch.float32, device=ref.device)
    out_i = torch.empty((n, 2), dtype=torch.int32, device=ref.device)
    has_next = next_ids is not None
    nxt = next_ids.to(device=ref.device, dtype=torch.int64) if has_next else out_i
    options = {"num_warps": num_warps, **({} if num_stages is None else
                                          {"num_stages": num_stages})}
    if n and variant == "online":
        kernels.stats_online_kernel[(n,)](
            ref, cand, nxt, out_f, out_i, v, ref.stride(0), cand.stride(0),
            HAS_NEXT=has_next, BLOCK_V=block_v, PREFETCH=prefetch,
            FAST=os.environ.get("TRITON_INTERPRET") != "1", **options)
    elif n:
        kernel = {"block": kernels.stats_kernel, "lanes": kernels.stats_lanes_kernel}[variant]
        kernel[(n,)](ref, cand, nxt, out_f, out_i, v, ref.stride(0), cand.stride(0),
                     HAS_NEXT=has_next, BLOCK_V=block_v, **options)
    res = {"ref_top1": out_i[:, 0].long(), "cand_top1": out_i[:, 1].long()}
    res.update({k: out_f[:, i] for i, k in enumerate(FIELDS)})
    return res
