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


def read_floor(ref, cand, block_v: int, num_warps: int):
    """Read both tensors row by row as the fused kernel does, adding them up (no exp, no
    selects): the bandwidth this access pattern reaches with arithmetic out of the way."""
    import torch

    from bench.gpu.read_floor import read_floor_kernel

    out = torch.empty(ref.shape[0], dtype=torch.float32, device=ref.device)
    read_floor_kernel[(ref.shape[0],)](ref, cand, out, ref.shape[1], ref.stride(0),
                                       cand.stride(0), BLOCK_V=block_v, num_warps=num_warps)
    return out


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

    from bench.gpu.variants import analyse_torch, analyse_variant, torch_chunk
    from runners.gpu.digest import digest_many, digest_numpy, digest_triton, launch_digests

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
        comp = torch.compile(torch_chunk, dynamic=False)

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

    # (variant, BLOCK_V, warps): a sweep; the fastest that agrees with the torch reference is
    # reported as the fused figure, every one is printed. "lanes" and "block" are the
    # earlier kernels (bench/gpu/kernel_variants.py), kept as baselines.
    configs = [("lanes", 1024, 4), ("block", 1024, 4)] + [
        ("online", bv, nw) for bv, nw in ((512, 2), (512, 4), (1024, 4), (1024, 8),
                                          (2048, 8), (4096, 16))]
    if not dev.startswith("cuda"):
        configs = [("lanes", 256, 4), ("online", 256, 4)]
    for var, bv, nw in configs:
        name = f"fused_{var}_bv{bv}_w{nw}"
        try:
            run(name, lambda var=var, bv=bv, nw=nw, name=name: results.__setitem__(
                name, analyse_variant(ref, cand, nxt, block_v=bv, num_warps=nw,
                                      variant=var)))
        except Exception as exc:  # a config that does not compile is reported, not fatal
            res[name] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
            print(f"{name}: {res[name]['error']}", flush=True)
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
    # hidden-state digests of every layer in one launch. "gpu": from before the launch
    # (table built on the host) to the kernel's end; "e2e": plus the copy of the partial
    # sums to the host and the digest strings. (splits, chunk, warps) swept; None = auto.
    dconf = [(None, 2048, 8), (None, 1024, 4), (None, 4096, 8), (1, 1024, 8), (2, 2048, 8),
             (16, 1024, 4)]
    if not dev.startswith("cuda"):
        dconf = [(None, 64, 4)]
    want = [digest_triton(h, a.block) for h in hidden]  # one tensor per launch
    dbest = None
    for sp, ch, nw in dconf:
        name = f"digests_hidden_sp{sp or 'auto'}_c{ch}_w{nw}"
        run(name, lambda sp=sp, ch=ch, nw=nw: launch_digests(hidden, a.block, sp, ch, nw), hbytes)
        got = {}
        run(name + "_e2e", lambda sp=sp, ch=ch, nw=nw, got=got: got.__setitem__(
            "d", digest_many(hidden, a.block, sp, ch, nw)), hbytes)
        res[name]["equal"] = got["d"] == want
        pend = launch_digests(hidden, a.block, sp, ch, nw)  # table kept: the kernel alone
        run(name + "_kernel", lambda pend=pend, ch=ch, nw=nw: pend.run_kernel(ch, nw), hbytes)
        res[name]["kernel_s"] = res[name + "_kernel"]["s"]
        res[name]["e2e_s"] = res[name + "_e2e"]["s"]
        if res[name]["equal"] and (dbest is None or res[name]["s"] < res[dbest]["s"]):
            dbest = name
    res["digests_best"] = dbest
    res["digests_hidden"] = res[dbest] if dbest else {"error": "no digest config agreed"}
    res["digests_hidden_layers"] = len(hidden)
    sp, ch, nw = dconf[0] if dbest is None else next(
        c for c in dconf if f"digests_hidden_sp{c[0] or 'auto'}_c{c[1]}_w{c[2]}" == dbest)
    # the logits (one tensor of 64 blocks): default splits (enough programs for one wave),
    # the hidden states' best chunk and warps
    run("digest_logits", lambda: launch_digests([ref], a.block, None, ch, nw), read // 2)
    run("digest_logits_e2e", lambda: digest_many([ref], a.block, None, ch, nw), read // 2)
    h0 = hidden[-1]
    res["check"]["digest_equals_host"] = digest_triton(h0, a.block) == digest_numpy(
        h0.contiguous().view(torch.int16).cpu().numpy(), a.block)
    if dev.startswith("cuda"):  # the same loop shape with no arithmetic: this loop's floor
        for bv, nw in ((1024, 4), (2048, 8)):
            run(f"triton_read_floor_bv{bv}_w{nw}",
                lambda bv=bv, nw=nw: read_floor(ref, cand, bv, nw))
    run("amax_one_tensor", lambda: ref.amax(), read // 2)
    dst = torch.empty_like(ref)
    run("device_copy_rw", lambda: dst.copy_(ref), read)  # read + write, as KINDS.md counts
    f = res[best]["s"] if best else float("nan")
    dg = res["digests_hidden"].get("s", float("nan"))
    dg_e2e = res["digests_hidden"].get("e2e_s", float("nan"))
    dl = res["digest_logits"]["s"]
    res["ratios"] = {
        "fused_vs_torch_plain": res["torch_plain"]["s"] / f,
        "fused_vs_torch_compile": (res["torch_compile"]["s"] / f) if "torch_compile" in res
        else None,
        "fused_TB_per_s_vs_copy": (read / f / 1e12) / res["device_copy_rw"]["TB_per_s"],
        "analysis_plus_digests_vs_forward": (f + dg) / res["forward_s"],
        "analysis_plus_digests_e2e_vs_forward": (f + dg_e2e) / res["forward_s"],
        "analysis_plus_digests_and_logits_digest_vs_forward": (f + dg + dl) / res["forward_s"],
        "digests_hidden_TB_per_s_vs_copy": res["digests_hidden"].get("TB_per_s", float("nan"))
        / res["device_copy_rw"]["TB_per_s"],
        "torch_plain_vs_forward": res["torch_plain"]["s"] / res["forward_s"],
        "target_fused_2_1_TB_per_s": read / f / 1e12 >= 2.1,
        "target_under_5pct_of_forward": (f + dg) / res["forward_s"] < 0.05,
        "target_under_5pct_of_forward_e2e": (f + dg_e2e) / res["forward_s"] < 0.05,
    }
    print(json.dumps({"check": res["check"], "ratios": res["ratios"]}, indent=1))
    if a.json:
        a.json.write_text(json.dumps(res, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
