"""The per-position figures of runners/analysis/topk.py on a chunk of logits on its device
(torch ops beside the fused kernel): the ordered top-10 lists, their agreement depth, the
label's rank on each side, the reference's top-1 probability and the next token's
log-probability on each side. Only [rows, 10] tensors exist besides the chunk.
"""

from __future__ import annotations

from typing import Any

from runners.analysis.topk import K_MAX, NOT_IN_TOP


def top_ids(x, k: int = K_MAX):
    """[rows, k] ids of each row's k largest logits, largest first, ties by the lower id
    (runners/analysis/topk.py:top_ids; torch.topk alone leaves the order of ties open)."""
    import torch

    v = x.shape[1]
    k = min(k, v)
    vals, idx = torch.topk(x, min(k + 1, v), dim=1, largest=True, sorted=True)
    o = torch.argsort(idx, dim=1)  # ids ascending, then a stable sort by value
    vals, idx = vals.gather(1, o), idx.gather(1, o)
    o = torch.sort(vals, dim=1, descending=True, stable=True).indices
    vals, idx = vals.gather(1, o), idx.gather(1, o)
    out = idx[:, :k].clone()
    if k < v:  # a tie across the k-th place: which tied ids make the list (rare)
        for r in (vals[:, k - 1] == vals[:, k]).nonzero().flatten().tolist():
            out[r] = torch.sort(x[r], descending=True, stable=True).indices[:k]
    return out


def list_figures(lr, lc, nxt, lse_r, lse_c) -> dict[str, Any]:
    """Per-position tensors: ref_p_top1, ref_logp_next, cand_logp_next (fp32 from the logits
    and the kernel's logsumexp), top_agree_depth, ref_label_rank, cand_label_rank."""
    import torch

    tr, tc = top_ids(lr), top_ids(lc)
    depth = torch.cumprod((tr == tc).to(torch.int32), dim=1).sum(dim=1)
    out = {"top_agree_depth": depth.to(torch.int8)}
    for side, ids in (("ref", tr), ("cand", tc)):
        hit = (ids == nxt[:, None]).to(torch.int32)
        out[f"{side}_label_rank"] = torch.where(hit.sum(1) > 0, hit.argmax(1),
                                                NOT_IN_TOP).to(torch.int8)
    out["ref_p_top1"] = torch.exp(lr.gather(1, tr[:, :1])[:, 0].float() - lse_r)
    out["ref_logp_next"] = lr.gather(1, nxt[:, None])[:, 0].float() - lse_r
    out["cand_logp_next"] = lc.gather(1, nxt[:, None])[:, 0].float() - lse_c
    return out


def max_abs_delta(lr, lc, parts: int = 8):
    """Per row: max |lr - lc| in fp32, in row slices (never a whole fp32 copy of a chunk)."""
    import torch

    out = torch.empty(lr.shape[0], dtype=torch.float32, device=lr.device)
    step = max(1, -(-lr.shape[0] // parts))
    for s in range(0, lr.shape[0], step):
        out[s:s + step] = (lr[s:s + step].float() - lc[s:s + step].float()).abs().amax(dim=1)
    return out
