"""GPU analysis at memory bandwidth: forward pass vs plain torch / torch.compile / fused
Triton analysis, on-device digests, and the bandwidth floor (amax, device copy).

    python bench/bench_gpu_analysis.py [--positions 16384] [--vocab 151936] [--json OUT]
    TRITON_INTERPRET=1 python bench/bench_gpu_analysis.py --device cpu --positions 64 \\
        --vocab 1000 --layers 2 --hidden 64 --no-compile     # dry run of the script on CPU

Two bf16 logit tensors [positions x vocab]: the reference is the model's own logits, the
candidate the same plus small noise. Every figure is measured side by side in one process
(CUDA events, median of --repeat runs after a warm-up); bandwidth = bytes read / time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def timer(device: str, repeat: int):
    import torch

    def measure(fn) -> float:
        fn()  # warm-up (compiles, autotunes, allocates)
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

    return measure


def model(layers: int, hidden: int, vocab: int, device: str):
    import torch
    from transformers import AutoModelForCausalLM, Qwen3Config

    small = hidden < 1024
    cfg = Qwen3Config(vocab_size=vocab, hidden_size=hidden, intermediate_size=3 * hidden,
                      num_hidden_layers=layers, num_attention_heads=4 if small else 16,
                      num_key_value_heads=2 if small else 8, head_dim=32 if small else 128,
                      max_position_embeddings=40960, rope_theta=1000000.0,
                      tie_word_embeddings=True, use_sliding_window=False)
    torch.manual_seed(0)
    with torch.device(device):
        m = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16,
                                             attn_implementation="sdpa")
    return m.eval()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--positions", type=int, default=16384)
    ap.add_argument("--vocab", type=int, default=151936)
    ap.add_argument("--layers", type=int, default=28)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--block", type=int, default=256, help="positions per digest block")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()

    import torch

    from runners.gpu.digest import digest_numpy, digest_triton
    from runners.gpu.stats import _chunk, analyse_fused, analyse_torch

    dev = a.device
    measure = timer(dev, a.repeat)
    res: dict = {"positions": a.positions, "vocab": a.vocab, "layers": a.layers,
                 "hidden": a.hidden, "device": dev, "torch": torch.__version__}
    if dev.startswith("cuda"):
        res["device_name"] = torch.cuda.get_device_name(0)
        import triton

        res["triton"] = triton.__version__
    m = model(a.layers, a.hidden, a.vocab, dev)
    g = torch.Generator(device=dev).manual_seed(1)
    ids = torch.randint(0, a.vocab, (1, a.positions + 1), generator=g, device=dev)
    x = ids[:, :-1]
    out = {}

    def fwd():
        with torch.inference_mode():
            out["o"] = m(input_ids=x, output_hidden_states=True, use_cache=False)

    res["forward_s"] = measure(fwd)
    hidden = [h[0] for h in out["o"].hidden_states]
    ref = out["o"].logits[0]
    del out["o"]
    cand = (ref.float() + 0.02 * torch.randn(ref.shape, generator=g, device=dev)
            ).to(torch.bfloat16)
    nxt = ids[0, 1:]
    read = 2 * ref.numel() * ref.element_size()
    res["analysis_bytes"] = read
    results = {}

    def run(name, fn, nbytes=read):
        t = measure(fn)
        res[name] = {"s": t, "TB_per_s": nbytes / t / 1e12}
        print(f"{name:28s} {t * 1e3:10.3f} ms  {nbytes / t / 1e12:6.3f} TB/s", flush=True)

    print(f"forward ({a.layers} layers, {a.positions} tokens) {res['forward_s'] * 1e3:.2f} ms")
    run("torch_plain", lambda: results.__setitem__("torch", analyse_torch(ref, cand, nxt)))
    if not a.no_compile:
        comp = torch.compile(_chunk, dynamic=False)

        def compiled():
            for s in range(0, len(ref), 1024):
                comp(ref[s:s + 1024], cand[s:s + 1024], nxt[s:s + 1024])

        run("torch_compile", compiled)
    best = None
    tr = results["torch"]

    def agrees(fu) -> bool:  # a config counts only if it reproduces the reference
        return bool(torch.equal(tr["ref_top1"], fu["ref_top1"])
                    and torch.equal(tr["cand_top1"], fu["cand_top1"])
                    and float((tr["kl_ref_cand"] - fu["kl_ref_cand"]).abs().max()) < 1e-3)

    # (variant, BLOCK_V, warps, pipeline stages): a small sweep; the fastest that agrees
    # with the torch reference is reported as the fused figure, every one is printed
    configs = [("block", 4096, 8, 1), ("block", 4096, 8, 3), ("block", 8192, 16, 1),
               ("lanes", 1024, 4, 1), ("lanes", 2048, 8, 1), ("lanes", 2048, 8, 3),
               ("lanes", 1024, 4, 3), ("lanes", 4096, 16, 1)]
    if not dev.startswith("cuda"):
        configs = [("block", 256, 4, 1), ("lanes", 256, 4, 1)]
    for var, bv, nw, ns in configs:
        name = f"fused_{var}_bv{bv}_w{nw}_s{ns}"
        try:
            run(name, lambda var=var, bv=bv, nw=nw, ns=ns, name=name: results.__setitem__(
                name, analyse_fused(ref, cand, nxt, block_v=bv, num_warps=nw, num_stages=ns,
                                    variant=var)))
        except Exception as exc:  # a config that does not compile is reported, not fatal
            res[name] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
            continue
        res[name]["agrees_with_torch"] = agrees(results[name])
        if res[name]["agrees_with_torch"] and (best is None or res[name]["s"] < res[best]["s"]):
            best = name
    res["fused_best"] = best
    if best is None:  # still measure and write the rest: the JSON says what failed
        print("no fused configuration agreed with the torch reference", flush=True)
        best = next((k for k in results if k.startswith("fused_")), None)
    fu = results[best] if best else tr
    res["check"] = {
        "fused_config": best,
        "top1_equal": bool(torch.equal(tr["ref_top1"], fu["ref_top1"])
                           and torch.equal(tr["cand_top1"], fu["cand_top1"])),
        **{f"max_abs_diff_{k}": float((tr[k].double() - fu[k].double()).abs().max())
           for k in ("lse_ref", "lse_cand", "kl_ref_cand", "kl_cand_ref", "margin", "delta_p")},
        "mean_kl_ref_cand": float(fu["kl_ref_cand"].double().mean()),
    }
    hbytes = sum(h.numel() * h.element_size() for h in hidden)
    run("digests_hidden", lambda: [digest_triton(h, a.block) for h in hidden], hbytes)
    run("digest_logits", lambda: digest_triton(ref, a.block), read // 2)
    h0 = hidden[-1]
    res["check"]["digest_equals_host"] = digest_triton(h0, a.block) == digest_numpy(
        h0.contiguous().view(torch.int16).cpu().numpy(), a.block)
    run("amax_one_tensor", lambda: ref.amax(), read // 2)
    dst = torch.empty_like(ref)
    run("device_copy_rw", lambda: dst.copy_(ref), read)  # read + write, as KINDS.md counts
    f = res[best]["s"] if best else float("nan")
    dg = res["digests_hidden"]["s"]
    res["ratios"] = {
        "fused_vs_torch_plain": res["torch_plain"]["s"] / f,
        "fused_vs_torch_compile": (res["torch_compile"]["s"] / f) if "torch_compile" in res
        else None,
        "fused_TB_per_s_vs_copy": (read / f / 1e12) / res["device_copy_rw"]["TB_per_s"],
        "analysis_plus_digests_vs_forward": (f + dg) / res["forward_s"],
        "torch_plain_vs_forward": res["torch_plain"]["s"] / res["forward_s"],
        "target_fused_2_1_TB_per_s": read / f / 1e12 >= 2.1,
        "target_under_5pct_of_forward": (f + dg) / res["forward_s"] < 0.05,
    }
    print(json.dumps({"check": res["check"], "ratios": res["ratios"]}, indent=1))
    if a.json:
        a.json.write_text(json.dumps(res, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
