"""The per-position figures of runners/analysis/topk.py on a chunk of logits on its device
(torch ops beside the fused kernel): the ordered top-10 lists, their agreement depth, the
label's rank on each side, the reference's top-1 probability and the next token's
log-probability on each side. Only [rows, 10] tensors exist besides the chunk.
"""

from __future__ import annotations

from typing import Any

from runners.analysis.topk import BLOCK, BLOCKS, K_MAX, NOT_IN_TOP

TIE_ROWS = 1024  # rows whose ties are resolved at once (a bool [rows, V] mask each)


def top_ids(x, k: int = K_MAX):
    """[rows, k] ids of each row's k largest logits, largest first, ties by the lower id:
    runners/analysis/topk.py:top_ids (the same block prefilter, then the exact lists of the
    kept blocks: torch.topk over whole rows took several times the fused kernel on an H100)."""
    import torch

    v = x.shape[1]
    k = min(k, v)
    nb = v // BLOCK
    if nb <= BLOCKS:
        return _exact(x, k)
    vf = nb * BLOCK
    bmv, bmi = torch.topk(x[:, :vf].reshape(-1, nb, BLOCK).amax(dim=2), BLOCKS + 1, dim=1)
    kept = torch.sort(bmi[:, :BLOCKS], dim=1).values
    pos = (kept[:, :, None] * BLOCK + torch.arange(BLOCK, device=x.device)).reshape(
        x.shape[0], -1)
    if vf < v:
        pos = torch.cat([pos, torch.arange(vf, v, device=x.device).expand(x.shape[0], -1)], 1)
    out = pos.gather(1, _exact(x.gather(1, pos), k))
    redo = (bmv[:, BLOCKS] >= bmv[:, k]).nonzero().flatten()  # a left-out block reaches t0
    if len(redo):
        out[redo] = _exact(x[redo], k)
    return out


def _exact(x, k: int):
    """top_ids without the prefilter."""
    import torch

    v = x.shape[1]
    vals, idx = torch.topk(x, min(k + 1, v), dim=1, largest=True, sorted=True)
    kth, beyond = vals[:, k - 1], (vals[:, k] if k < v else None)
    vals, idx = vals[:, :k], idx[:, :k]
    o = torch.argsort(idx, dim=1)  # ids ascending, then a stable sort by value
    vals, idx = vals.gather(1, o), idx.gather(1, o)
    o = torch.sort(vals, dim=1, descending=True, stable=True).indices
    out = idx.gather(1, o)
    if beyond is None:
        return out
    tied = (kth == beyond).nonzero().flatten()  # more ids hold the k-th value than places
    for s in range(0, len(tied), TIE_ROWS):
        rows = tied[s:s + TIE_ROWS]
        greater = (vals[rows] > kth[rows, None]).sum(dim=1)
        r, c = (x[rows] == kth[rows, None]).nonzero(as_tuple=True)  # ids ascending per row
        start = torch.searchsorted(r, torch.arange(len(rows), device=x.device))
        rank = torch.arange(len(r), device=x.device) - start[r]
        keep = rank < k - greater[r]
        out[rows[r[keep]], greater[r[keep]] + rank[keep]] = c[keep]
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
