"""Bench-only: the torch reference of the fused analysis and the kernel's earlier variants.

`analyse_torch` is the plain reference (fp32 log_softmax per chunk of rows, then KL and
argmax) with runners/gpu/fused.py:analyse_fused's interface; tests and the bench compare the
two. `analyse_variant` runs one of the baseline kernels (bench/gpu/kernel_variants.py):
"block" (block-wide reductions every BLOCK_V logits) or "lanes" (per-lane sums with the two
block maxima reduced every BLOCK_V); "online" is the runner's kernel. Same outputs.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from runners.gpu.fused import FIELDS, analyse_fused, check_shapes  # noqa: E402


def analyse_torch(ref, cand, next_ids=None, chunk_rows: int = 1024) -> dict[str, Any]:
    """Reference: fp32 log_softmax per chunk of rows, KL as sum p * (log p - log q)."""
    import torch

    check_shapes(ref, cand, next_ids)
    n = ref.shape[0]
    out = {k: torch.empty(n, dtype=torch.float32, device=ref.device) for k in FIELDS}
    top = {k: torch.empty(n, dtype=torch.int64, device=ref.device)
           for k in ("ref_top1", "cand_top1")}
    for s in range(0, n, chunk_rows):
        sl = slice(s, min(s + chunk_rows, n))
        part = torch_chunk(ref[sl], cand[sl], None if next_ids is None else next_ids[sl])
        for k, v in part.items():
            (top if k in top else out)[k][sl] = v
    return {**top, **out}


def torch_chunk(r, c, nxt) -> dict[str, Any]:
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


def analyse_variant(ref, cand, next_ids=None, block_v: int = 512, num_warps: int = 2,
                    variant: str = "online") -> dict[str, Any]:
    """One Triton pass with the named kernel variant (same outputs as analyse_fused)."""
    if variant == "online":
        return analyse_fused(ref, cand, next_ids, block_v=block_v, num_warps=num_warps)
    import torch

    from bench.gpu import kernel_variants

    check_shapes(ref, cand, next_ids)
    n, v = ref.shape
    out_f = torch.empty((n, 6), dtype=torch.float32, device=ref.device)
    out_i = torch.empty((n, 2), dtype=torch.int32, device=ref.device)
    has_next = next_ids is not None
    nxt = next_ids.to(device=ref.device, dtype=torch.int64) if has_next else out_i
    kernel = {"block": kernel_variants.stats_kernel,
              "lanes": kernel_variants.stats_lanes_kernel}[variant]
    if n:
        kernel[(n,)](ref, cand, nxt, out_f, out_i, v, ref.stride(0), cand.stride(0),
                     HAS_NEXT=has_next, BLOCK_V=block_v, num_warps=num_warps)
    res = {"ref_top1": out_i[:, 0].long(), "cand_top1": out_i[:, 1].long()}
    res.update({k: out_f[:, i] for i, k in enumerate(FIELDS)})
    return res
