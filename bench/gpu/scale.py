"""The study's scale on one GPU: 131,072 tokens x 151,936 outputs analysed from stored hidden
states, beside the floors measured in the same process.

    python bench/gpu/scale.py --model M --work W --backends flash,cudnn --json OUT

W holds `prov run repeat` work directories (W/BACKEND/run0/scores.npz: hidden-state
results). Measured here, each with CUDA events (median of --repeat after a warm-up):
  forward: the engine's forward pass (flash, every hidden state, logits at the sampled rows);
  digests: the per-layer x block digests of that forward's hidden states (one launch);
  matmul floor: the rebuild GEMMs alone (hidden @ head^T per chunk, both runs);
  memory floor: writing and reading the rebuilt logits once at the device-copy bandwidth
    measured here (what any pipeline that materialises the logits must move);
  pipeline: rebuild + fused kernel per chunk (GPU time), and the runner's analyse_hidden
    (wall clock, with the per-chunk copies to the host and the .npy files);
  the rebuild floor at the sampled rows, a 4,096-position host slice (the GPU-rebuilt logits
    analysed by the host's numpy float64 code) against the fused kernel, the bytes stored per
    run, and one forward of each other attention backend at this length (fits or not).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
DEV = "cuda"  # --device cpu (with TRITON_INTERPRET=1) dry-runs the script on tiny shapes


def timed(fn, repeat: int) -> float:
    import torch

    fn()
    out = []
    for _ in range(repeat):
        if DEV == "cpu":
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
            continue
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        out.append(a.elapsed_time(b) / 1e3)
    return statistics.median(out)


def empty_cache() -> None:
    import torch

    if DEV == "cuda":
        torch.cuda.empty_cache()


def load_model(model: Path, attn: str):
    import torch
    from transformers import AutoModelForCausalLM

    m = AutoModelForCausalLM.from_pretrained(model, dtype=torch.bfloat16,
                                             attn_implementation=attn).to(DEV)
    return m.eval()


def forward_and_digests(m, ids, repeat: int, res: dict) -> None:
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from runners.gpu.digest import launch_digests
    from runners.hidden import sample_rows

    x = torch.tensor([ids], device=DEV)
    keep = torch.from_numpy(sample_rows(len(ids) - 1)).to(DEV)
    box = {}
    def flash():  # a fresh context each call: sdpa_kernel's is single-use
        return sdpa_kernel([SDPBackend.FLASH_ATTENTION]) if DEV == "cuda" else \
            contextlib.nullcontext()

    def fwd():
        box.pop("o", None)
        with torch.inference_mode(), flash():
            box["o"] = m(input_ids=x, output_hidden_states=True, use_cache=False,
                         logits_to_keep=keep)

    res["forward_s"] = timed(fwd, 1)
    tensors = [h[0] for h in box["o"].hidden_states]
    res["digest_tensors"] = len(tensors)
    res["digests_s"] = timed(lambda: launch_digests(tensors, 256), repeat)
    t0 = time.perf_counter()
    launch_digests(tensors, 256).result()
    res["digests_e2e_s"] = time.perf_counter() - t0
    box.clear()
    empty_cache()


def floors_and_pipeline(hr, hc, head, nxt, repeat: int, res: dict) -> None:
    import torch

    from runners.gpu.fused import analyse_fused
    from runners.gpu.rebuild import chunk_rows_for

    n, v = hr.shape[0], head.shape[0]
    rows = chunk_rows_for(v, DEV)
    bufs = [torch.empty((rows, v), dtype=hr.dtype, device=DEV) for _ in range(2)]

    def gemms():
        for s in range(0, n, rows):
            e = min(s + rows, n)
            torch.matmul(hr[s:e], head.T, out=bufs[0][:e - s])
            torch.matmul(hc[s:e], head.T, out=bufs[1][:e - s])

    def pipeline():
        for s in range(0, n, rows):
            e = min(s + rows, n)
            analyse_fused(hr[s:e] @ head.T, hc[s:e] @ head.T, nxt[s:e])

    dst = torch.empty_like(bufs[0])
    copy_s = timed(lambda: dst.copy_(bufs[0]), repeat)
    copy_bw = 2 * bufs[0].numel() * bufs[0].element_size() / copy_s
    logit_bytes = 2 * n * v * hr.element_size()  # both runs' rebuilt logits
    res.update({
        "chunk_rows": rows, "matmul_floor_s": timed(gemms, repeat),
        "device_copy_TB_per_s": copy_bw / 1e12,
        "memory_floor_s": 2 * logit_bytes / copy_bw, "logit_bytes_both_runs": logit_bytes,
        "pipeline_gpu_s": timed(pipeline, repeat)})
    res["gemm_tflops"] = 2 * 2 * n * v * hr.shape[1] / res["matmul_floor_s"] / 1e12


def host_slice(hr, hc, head, nxt, gpu: dict, start: int, rows: int = 4096) -> dict:
    """The GPU-rebuilt logits of one slice, analysed by the host's float64 numpy code, against
    the fused kernel's per-position results for the same rows."""
    import numpy as np

    from runners.analysis import position_stats

    sl = slice(start, start + rows)
    lr = (hr[sl] @ head.T).float().cpu().numpy()
    lc = (hc[sl] @ head.T).float().cpu().numpy()
    st = position_stats(lr, lc, nxt[sl].cpu().numpy())
    host = {"ref_top1": st.ref_top1, "cand_top1": st.cand_top1, "kl_ref_cand": st.kl_ref_cand,
            "kl_cand_ref": st.kl_cand_ref, "delta_p": st.delta_p, "margin": st.margin}
    out = {"start": start, "rows": rows,
           "top1_identical": bool(all(np.array_equal(host[k], np.asarray(gpu[k][sl]))
                                      for k in ("ref_top1", "cand_top1")))}
    for k in ("kl_ref_cand", "kl_cand_ref", "delta_p", "margin"):
        out[f"max_abs_diff_{k}"] = float(np.abs(host[k] - np.asarray(gpu[k][sl])).max())
    out["within_1e-6"] = all(out[f"max_abs_diff_{k}"] <= 1e-6
                             for k in ("kl_ref_cand", "kl_cand_ref", "delta_p", "margin"))
    out["host_mean_kl_ref_cand"] = float(st.kl_ref_cand.mean())
    return out


def stored_run(run_dir: Path) -> dict:
    import numpy as np

    meta = json.loads((run_dir / "run.json").read_text())
    with np.load(run_dir / "scores.npz") as z:
        arrays = {k: z[k] for k in ("final_hidden", "sample_rows", "sample_logits", "ids")}
    files = {p.name: p.stat().st_size for p in run_dir.iterdir() if p.is_file()}
    return {"meta": meta, "arrays": arrays, "files": files}


def other_backends(model: Path, ids, names: list[str]) -> dict:
    """One forward of each backend at this length: fits, or the error (out of memory)."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    sdpa = {"efficient": "EFFICIENT_ATTENTION", "math": "MATH"}
    out = {}
    x = torch.tensor([ids], device=DEV)
    for name in names:
        m = load_model(model, "eager" if name == "eager" else "sdpa")
        ctx = sdpa_kernel([getattr(SDPBackend, sdpa[name])]) if name in sdpa \
            else contextlib.nullcontext()
        if DEV == "cuda":
            torch.cuda.reset_peak_memory_stats()
        t0 = time.perf_counter()
        try:
            with torch.inference_mode(), ctx:
                m(input_ids=x, use_cache=False, logits_to_keep=1)
            status = "fits"
        except torch.OutOfMemoryError as exc:
            status = f"out of memory: {str(exc).splitlines()[0][:200]}"
        except RuntimeError as exc:
            status = f"refused: {str(exc).splitlines()[0][:200]}"
        out[name] = {"status": status, "seconds": round(time.perf_counter() - t0, 2),
                     "peak_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2)
                     if DEV == "cuda" else None}
        print(name, out[name], flush=True)
        del m
        empty_cache()
    return out


def analysis(a, ids, res: dict) -> None:
    import numpy as np
    import torch

    from runners import hidden as hs
    from runners.gpu.rebuild import analyse_hidden
    from runners.hidden_analysis import load_head

    ra, rb = (stored_run(a.work / b / "run0") for b in a.backends.split(",")[:2])
    st = ra["meta"]["storage"]
    head_np = load_head(a.model, st["head"]["tensor"], st["head"]["dtype"],
                           st["head"]["sha256"])
    dev = lambda raw: torch.from_numpy(raw).view(torch.bfloat16).to(DEV)  # noqa: E731
    hr, hc, head = dev(ra["arrays"]["final_hidden"]), dev(rb["arrays"]["final_hidden"]), \
        dev(head_np)
    nxt = torch.as_tensor(np.asarray(ids[1:], dtype=np.int64)).to(DEV)
    samples = {side: (r["arrays"]["sample_rows"],
                      hs.to_float32(r["arrays"]["sample_logits"], "bfloat16"))
               for side, r in (("ref", ra), ("cand", rb))}
    n, v = hr.shape[0], head.shape[0]
    res.update({"positions": int(n), "vocab": int(v), "hidden": int(hr.shape[1])})
    analyse_hidden(hr[:4096], hc[:4096], head, nxt[:4096].cpu().numpy(), a.scratch / "warm")
    t0 = time.perf_counter()
    rb_ = analyse_hidden(hr, hc, head, nxt.cpu().numpy(), a.scratch / "positions", samples)
    res["runner_analyse_hidden_wall_s"] = time.perf_counter() - t0
    res["rebuild_floor"] = rb_.floor
    agree = rb_.arrays["ref_top1"] == rb_.arrays["cand_top1"]
    res["top1_agreement"] = float(agree.mean())
    first = int(np.flatnonzero(~agree)[0]) if (~agree).any() else n // 2
    rows = min(4096, n)
    res["host_slice"] = host_slice(hr, hc, head, nxt, rb_.arrays,
                                   max(0, min(first - rows // 2, n - rows)), rows)
    floors_and_pipeline(hr, hc, head, nxt, a.repeat, res)
    res["stored_bytes_per_run"] = {
        "files": ra["files"], "total": sum(ra["files"].values()),
        "hidden_states": int(ra["arrays"]["final_hidden"].nbytes),
        "sampled_logits": int(ra["arrays"]["sample_logits"].nbytes),
        "full_logits_bf16": int(n * v * 2), "full_logits_fp32_as_scores": int(n * v * 4)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", type=Path, required=True)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--backends", default="flash,cudnn")
    ap.add_argument("--tokens", type=int, default=131072)
    ap.add_argument("--others", default="efficient,math,eager")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--scratch", type=Path, default=Path("/tmp/prov-scale"))
    ap.add_argument("--json", type=Path, required=True)
    ap.add_argument("--device", default="cuda")
    a = ap.parse_args()
    import torch

    global DEV
    DEV = a.device
    from runners.prepare import prepare

    ids = [int(i) for i in prepare(a.model, a.model / "eval.txt", a.tokens).ids]
    res: dict = {"device_name": torch.cuda.get_device_name(0) if DEV == "cuda" else DEV,
                 "torch": torch.__version__, "tokens": len(ids)}
    m = load_model(a.model, "sdpa")
    forward_and_digests(m, ids, a.repeat, res)
    del m
    empty_cache()
    analysis(a, ids, res)
    e2e = res["pipeline_gpu_s"] + res["digests_s"]
    floor = max(res["matmul_floor_s"], res["memory_floor_s"])
    res["ratios"] = {"e2e_gpu_s": e2e, "e2e_vs_larger_floor": e2e / floor,
                     "pipeline_vs_larger_floor": res["pipeline_gpu_s"] / floor,
                     "e2e_vs_forward": e2e / res["forward_s"],
                     "goal_under_1_5x_floor": e2e / floor < 1.5,
                     "goal_under_5pct_forward": e2e / res["forward_s"] < 0.05,
                     "stored_vs_full_logits_bf16": res["stored_bytes_per_run"]["total"]
                     / res["stored_bytes_per_run"]["full_logits_bf16"]}
    a.json.write_text(json.dumps(res, indent=1, default=str))
    print(json.dumps(res, indent=1, default=str)[:6000], flush=True)
    if a.others:
        res["other_backends"] = other_backends(a.model, ids, a.others.split(","))
        a.json.write_text(json.dumps(res, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
