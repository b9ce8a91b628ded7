"""Per-position comparison of two logit tensors [positions, vocab] (bf16/fp16/fp32) on device.

`analyse_fused` returns a dict of tensors (on the input's device):
  ref_top1, cand_top1 (int64; first index of the maximum, as torch.argmax),
  lse_ref, lse_cand (logsumexp), kl_ref_cand = KL(P_ref||P_cand), kl_cand_ref (nats),
  margin (reference p(top1) - p(top2)), delta_p (p_cand - p_ref of the next token; 0 without
  next_ids) — all fp32. KL is clamped at 0 (fp32 rounding can make a KL of identical rows a
  few ulps negative). The plain torch reference with the same interface is
  bench/gpu/variants.py:analyse_torch (tests and the bench compare the two).
"""

from __future__ import annotations

import os
from typing import Any

FIELDS = ("lse_ref", "lse_cand", "kl_ref_cand", "kl_cand_ref", "margin", "delta_p")
# The fastest configuration measured on an H200 (bench/results/2026-11-30-h200, bench.json:
# fused_online_bv512_w2_prefetch, 2.78 TB/s at 16,384 x 151,936)
BLOCK_V = 512
NUM_WARPS = 2


def check_shapes(ref, cand, next_ids) -> None:
    if ref.shape != cand.shape or ref.dim() != 2:
        raise ValueError(f"need two [positions, vocab] tensors, got {tuple(ref.shape)} "
                         f"and {tuple(cand.shape)}")
    if next_ids is not None and next_ids.shape != (ref.shape[0],):
        raise ValueError("next_ids must hold one token id per position")


def analyse_fused(ref, cand, next_ids=None, block_v: int = BLOCK_V,
                  num_warps: int = NUM_WARPS) -> dict[str, Any]:
    """One Triton pass over both tensors (rows must be contiguous along the vocabulary)."""
    import torch

    from runners.gpu import kernels

    check_shapes(ref, cand, next_ids)
    if ref.stride(1) != 1 or cand.stride(1) != 1:
        raise ValueError("logit rows must be contiguous along the vocabulary")
    n, v = ref.shape
    out_f = torch.empty((n, 6), dtype=torch.float32, device=ref.device)
    out_i = torch.empty((n, 2), dtype=torch.int32, device=ref.device)
    has_next = next_ids is not None
    nxt = next_ids.to(device=ref.device, dtype=torch.int64) if has_next else out_i
    if n:
        kernels.stats_online_kernel[(n,)](
            ref, cand, nxt, out_f, out_i, v, ref.stride(0), cand.stride(0),
            HAS_NEXT=has_next, BLOCK_V=block_v,
            FAST=os.environ.get("TRITON_INTERPRET") != "1", num_warps=num_warps)
    res = {"ref_top1": out_i[:, 0].long(), "cand_top1": out_i[:, 1].long()}
    res.update({k: out_f[:, i] for i, k in enumerate(FIELDS)})
    return res
