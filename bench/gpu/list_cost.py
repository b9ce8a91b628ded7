"""What the list figures of issue #29 item 2 cost beside the fused kernel, per chunk of the
hidden-state path (runners/gpu/rebuild.py), measured side by side on one device.

    python bench/gpu/list_cost.py [--rows 7067] [--vocab 151936] [--repeat 5] [--json OUT]
        [--positions 32768]
    TRITON_INTERPRET=1 python bench/gpu/list_cost.py --device cpu --rows 64 --vocab 2000 \\
        --repeat 1                                  # dry run of the script on CPU

Two bf16 logit tensors [rows x vocab] (the chunk the rebuild holds at a time: 2^30 logits a
side on a GPU), the candidate the reference plus small noise. Times (CUDA events, median of
--repeat after a warm-up): the fused kernel (KL, top-1, margin, Delta-p: the analysis before
the new figures), the list figures beside it (runners/gpu/topk.py: ordered top-10 lists of
both sides with the tie rule, label ranks, the reference's top-1 probability, the next
token's log-probabilities), their torch.topk alone, and the noise floor's max |delta logit|.
Checks the lists against a stable full sort on a slice of rows. Then (--positions N) the
whole hidden-state analysis, runners/gpu/rebuild.py:analyse_hidden over N positions of
hidden size 1024 (rebuild, kernel, lists, results streamed to disk), wall seconds with the
list figures and with them stubbed out (the analysis as it was before them).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def measure(fn, device: str, repeat: int) -> float:
    import torch

    fn()
    times = []
    for _ in range(repeat):
        if device.startswith("cuda"):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            torch.cuda.synchronize()
            times.append(a.elapsed_time(b) / 1e3)
        else:
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
    return statistics.median(times)


def pipeline(positions: int, vocab: int, device: str) -> dict:
    """Wall seconds of analyse_hidden with the list figures and without them."""
    import tempfile

    import torch

    import runners.gpu.topk as tk
    from runners.gpu.rebuild import analyse_hidden

    g = torch.Generator(device=device).manual_seed(1)
    ref_h = torch.randn(positions, 1024, generator=g, device=device).to(torch.bfloat16)
    cand_h = (ref_h.float() + 0.01 * torch.randn(positions, 1024, generator=g, device=device)
              ).to(torch.bfloat16)
    head = (torch.randn(vocab, 1024, generator=g, device=device) * 0.05).to(torch.bfloat16)
    nxt = torch.randint(0, vocab, (positions,), generator=g, device=device).cpu().numpy()

    def stub(lr, lc, nxt, lse_r, lse_c):
        z = torch.zeros(lr.shape[0], device=lr.device)
        return {k: z for k in ("ref_p_top1", "ref_logp_next", "cand_logp_next",
                               "top_agree_depth", "ref_label_rank", "cand_label_rank")}

    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, fn in (("warm", tk.list_figures), ("with_lists", tk.list_figures),
                         ("before_lists", stub), ("with_lists_again", tk.list_figures)):
            tk.list_figures = fn
            t = time.perf_counter()
            analyse_hidden(ref_h, cand_h, head, nxt, Path(tmp) / name)
            if device.startswith("cuda"):
                torch.cuda.synchronize()
            out[name] = round(time.perf_counter() - t, 3)
    out.pop("warm")
    best = min(out["with_lists"], out["with_lists_again"])
    return {"positions": positions, "hidden": 1024, "wall_seconds": out,
            "ratio_with_over_before": round(best / out["before_lists"], 3)}


def chunk(rows: int, vocab: int, device: str, repeat: int) -> dict:
    """The per-chunk timings and the lists' check (module docstring)."""
    import torch

    from runners.gpu.fused import analyse_fused
    from runners.gpu.topk import list_figures, max_abs_delta, top_ids

    g = torch.Generator(device=device).manual_seed(0)
    ref = (torch.randn(rows, vocab, generator=g, device=device) * 3).to(torch.bfloat16)
    cand = (ref.float() + 0.05 * torch.randn(rows, vocab, generator=g, device=device)
            ).to(torch.bfloat16)
    nxt = torch.randint(0, vocab, (rows,), generator=g, device=device)
    res = analyse_fused(ref, cand, nxt)
    t = {"fused_kernel": measure(lambda: analyse_fused(ref, cand, nxt), device, repeat),
         "list_figures": measure(lambda: list_figures(ref, cand, nxt, res["lse_ref"],
                                                      res["lse_cand"]), device, repeat),
         "torch_topk_11_one_side": measure(lambda: torch.topk(ref, 11, dim=1), device,
                                           repeat),
         "top_ids_one_side": measure(lambda: top_ids(ref), device, repeat),
         "max_abs_delta": measure(lambda: max_abs_delta(ref, cand), device, repeat)}
    vals = torch.topk(ref, 11, dim=1).values
    check = min(rows, 256)
    exact = torch.sort(ref[:check].float(), dim=1, descending=True, stable=True).indices[:, :10]
    return {"rows": rows, "vocab": vocab, "repeat": repeat,
            "seconds": {k: round(v, 6) for k, v in t.items()},
            "bytes_read_by_kernel": 2 * rows * vocab * 2,
            "kernel_tb_per_s": round(2 * rows * vocab * 2 / t["fused_kernel"] / 1e12, 3),
            "ratio_fused_plus_lists_over_fused": round(
                (t["fused_kernel"] + t["list_figures"]) / t["fused_kernel"], 3),
            "boundary_tie_rows": float((vals[:, 9] == vals[:, 10]).float().mean()),
            "lists_equal_stable_sort_first_rows": bool(torch.equal(top_ids(ref[:check]),
                                                                   exact)),
            "checked_rows": check}


def main() -> None:
    import torch

    from runners.gpu.rebuild import chunk_rows_for

    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--vocab", type=int, default=151936)
    ap.add_argument("--rows", type=int, default=None, help="default: the rebuild's chunk")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", default=None)
    ap.add_argument("--positions", type=int, default=0, help="also time analyse_hidden")
    a = ap.parse_args()
    out = {"device": torch.cuda.get_device_name() if a.device.startswith("cuda") else "cpu",
           "torch": torch.__version__,
           **chunk(a.rows or chunk_rows_for(a.vocab, a.device), a.vocab, a.device, a.repeat)}
    if a.device.startswith("cuda"):
        torch.cuda.empty_cache()
    if a.positions:
        out["pipeline"] = pipeline(a.positions, a.vocab, a.device)
    print(json.dumps(out, indent=1))
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
