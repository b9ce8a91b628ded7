"""Logits rebuilt from stored hidden states, chunk by chunk, analysed per chunk.

Both runs' final post-norm hidden states [N, H] and the output head [V, H] sit on one
device; each chunk of rows is rebuilt as hidden @ head^T in the runs' dtype (the output
head's own matmul: on the same device and dtype, what the engine's lm_head computed, up to
the GEMM's reduction order, which the rebuild floor measures) and analysed at once: on a GPU
by the fused Triton kernel (KL, top-1, margin, Delta-p) with torch ops beside it for the
ordered top-10 lists and the next token's log-probabilities (runners/gpu/topk.py), on the host
by runners.analysis.position_stats (float64 numpy).
Only one chunk's logits exist at a time (2 x rows x V), and each chunk's per-position results
are written to .npy files on disk as they come (streamed: nothing of size N x V is kept).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

# per-position outputs (dtype on disk): the fused kernel's, then the list figures computed
# beside it (runners/gpu/topk.py)
POSITION_FIELDS = {"ref_top1": np.int64, "cand_top1": np.int64, "margin": np.float64,
                   "kl_ref_cand": np.float64, "kl_cand_ref": np.float64,
                   "delta_p": np.float64, "ref_p_top1": np.float64,
                   "ref_logp_next": np.float64, "cand_logp_next": np.float64,
                   "top_agree_depth": np.int8, "ref_label_rank": np.int8,
                   "cand_label_rank": np.int8}
DELTA_FIELD = "max_abs_logit_delta"  # the noise floor's: max |delta logit| per position
CHUNK_CELLS = 1 << 30  # logits per side per chunk on a GPU: 2 GiB of bf16 each


@dataclass
class Rebuilt:
    arrays: dict[str, np.ndarray]  # POSITION_FIELDS, memory-mapped from out_dir
    floor: dict[str, Any]  # rebuilt vs engine logits at the sampled rows, per side
    seconds: dict[str, float] = field(default_factory=dict)
    chunk_rows: int = 0
    device: str = "cpu"
    fused: bool = False


def chunk_rows_for(vocab: int, device: str) -> int:
    """Rows per chunk: CHUNK_CELLS logits per side on a GPU, 256K cells on the host."""
    cells = CHUNK_CELLS if str(device).startswith("cuda") else 1 << 18
    return max(1, cells // max(vocab, 1))


def _open_outputs(out_dir: Path, n: int, delta: bool) -> dict[str, np.ndarray]:
    out_dir.mkdir(parents=True, exist_ok=True)
    fields = {**POSITION_FIELDS, **({DELTA_FIELD: np.float64} if delta else {})}
    return {k: np.lib.format.open_memmap(out_dir / f"{k}.npy", mode="w+", dtype=dt, shape=(n,))
            for k, dt in fields.items()}


def _analyse_chunk(lr, lc, nxt, fused: bool, delta: bool) -> dict[str, np.ndarray]:
    """One chunk's per-position results on the host (numpy), whatever device computed."""
    from runners.gpu.topk import max_abs_delta

    extra = {DELTA_FIELD: max_abs_delta(lr, lc).cpu().numpy()} if delta else {}
    if fused:
        from runners.gpu.fused import analyse_fused
        from runners.gpu.topk import list_figures

        res = analyse_fused(lr, lc, nxt)
        res.update(list_figures(lr, lc, nxt, res["lse_ref"], res["lse_cand"]))
        return {**{k: res[k].cpu().numpy() for k in POSITION_FIELDS}, **extra}
    from runners.analysis import position_stats

    st = position_stats(lr.float().numpy(), lc.float().numpy(), nxt.numpy())
    return {**{k: getattr(st, k) for k in POSITION_FIELDS}, **extra}


def _floor(engine: np.ndarray, rebuilt: np.ndarray) -> dict[str, Any]:
    """Rebuilt vs engine logits at the sampled rows: max |delta logit|, KL(engine||rebuilt),
    top-1 equality."""
    from runners.analysis.kl import kl_rows

    if not len(engine):
        return {"rows": 0}
    kl = np.maximum(kl_rows(engine, rebuilt), 0.0)
    return {"rows": len(engine), "max_abs_logit_delta": float(np.abs(engine - rebuilt).max()),
            "bit_identical_rows": int((engine == rebuilt).all(axis=1).sum()),
            "top1_equal": bool((engine.argmax(1) == rebuilt.argmax(1)).all()),
            "self_kl_mean": float(kl.mean()), "self_kl_max": float(kl.max())}


def analyse_hidden(ref_h, cand_h, head, next_ids, out_dir: Path,
                   samples: dict[str, tuple[np.ndarray, np.ndarray]] | None = None,
                   chunk_rows: int | None = None, fused: bool | None = None,
                   logit_delta: bool = False) -> Rebuilt:
    """Rebuild and analyse every row. ref_h, cand_h [N, H], head [V, H]: tensors on one
    device in one dtype; next_ids [N]. samples: side ("ref"/"cand") -> (rows, the engine's
    float32 logits at those rows), for the rebuild floor. fused: the Triton kernel (default
    on a GPU; on CPU tensors only under TRITON_INTERPRET=1, as the tests run it) or the host's
    numpy analysis (default elsewhere). logit_delta: also each row's max |delta logit| (the
    noise floor's, DELTA_FIELD)."""
    import torch

    n, v = int(ref_h.shape[0]), int(head.shape[0])
    if cand_h.shape != ref_h.shape or head.shape[1] != ref_h.shape[1]:
        raise ValueError(f"hidden states {tuple(ref_h.shape)} / {tuple(cand_h.shape)} do not "
                         f"fit the output head {tuple(head.shape)}")
    dev = ref_h.device
    fused = dev.type == "cuda" if fused is None else fused
    rows = chunk_rows or chunk_rows_for(v, str(dev))
    outs = _open_outputs(Path(out_dir), n, logit_delta)
    nxt = torch.as_tensor(np.asarray(next_ids, dtype=np.int64)).to(dev)
    samples = samples or {}
    got = {side: np.empty((len(r), v), np.float32) for side, (r, _) in samples.items()}
    t0 = time.perf_counter()
    with torch.inference_mode():
        for s in range(0, n, rows):
            e = min(s + rows, n)
            lr, lc = ref_h[s:e] @ head.T, cand_h[s:e] @ head.T
            for k, val in _analyse_chunk(lr, lc, nxt[s:e], fused, logit_delta).items():
                outs[k][s:e] = val
            for side, (want, _) in samples.items():
                hit = np.flatnonzero((want >= s) & (want < e))
                if len(hit):
                    part = (lr if side == "ref" else lc)[torch.as_tensor(want[hit] - s).to(dev)]
                    got[side][hit] = part.float().cpu().numpy()
    seconds = {"rebuild_and_analysis": time.perf_counter() - t0}
    for a in outs.values():
        a.flush()
    floor = {side: _floor(engine, got[side]) for side, (_, engine) in samples.items()}
    return Rebuilt(outs, floor, seconds, rows, str(dev), fused)
