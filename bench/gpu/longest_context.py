"""The longest context each attention backend fits in one forward pass on this GPU.

    python bench/gpu/longest_context.py --json OUT [--lengths 16384,24576,32768,40960]

The model is the divergence model's shape (Qwen3-0.6B body, 28 layers, output vocabulary
8,192, random init from seed 0, bf16). For each backend (SDPA forced to FLASH_ATTENTION,
CUDNN_ATTENTION, EFFICIENT_ATTENTION, MATH; and eager) it runs the forward pass the worker
runs (all positions' logits, every hidden state, no KV cache) at growing lengths and stops at
the first that does not fit (out of memory) or that the kernel refuses. Lengths stop at
40,960, the model's max_position_embeddings (Qwen3-0.6B's). Prints one line per attempt and
writes {backend: {"longest": L, "attempts": [...]}}.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

SDPA = {"flash": "FLASH_ATTENTION", "cudnn": "CUDNN_ATTENTION",
        "efficient": "EFFICIENT_ATTENTION", "math": "MATH"}


def build(attn: str, layers: int, vocab: int, device: str):
    import torch
    from transformers import AutoModelForCausalLM, Qwen3Config

    cfg = Qwen3Config(vocab_size=vocab, hidden_size=1024, intermediate_size=3072,
                      num_hidden_layers=layers, num_attention_heads=16, num_key_value_heads=8,
                      head_dim=128, max_position_embeddings=40960, rope_theta=1000000.0,
                      rms_norm_eps=1e-6, tie_word_embeddings=True, use_sliding_window=False)
    torch.manual_seed(0)
    with torch.device(device):
        m = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16, attn_implementation=attn)
    return m.eval()


def attempt(model, kernel: str | None, length: int, vocab: int, device: str) -> dict:
    import contextlib

    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    cuda = device.startswith("cuda")
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    ids = torch.randint(0, vocab, (1, length), device=device,
                        generator=torch.Generator(device=device).manual_seed(length))
    ctx = sdpa_kernel(getattr(SDPBackend, kernel)) if kernel else contextlib.nullcontext()
    t0 = time.perf_counter()
    try:
        with ctx, torch.inference_mode():
            out = model(input_ids=ids, output_hidden_states=True, use_cache=False)
            if cuda:
                torch.cuda.synchronize()
            ok = bool(torch.isfinite(out.logits[0, -1]).all())
        del out
        status = "ok" if ok else "non-finite logits"
    except torch.OutOfMemoryError as exc:
        status = f"out of memory: {str(exc).splitlines()[0][:160]}"
    except RuntimeError as exc:  # e.g. "No available kernel"
        status = f"refused: {str(exc).splitlines()[0][:160]}"
    seconds = time.perf_counter() - t0
    peak = torch.cuda.max_memory_allocated() / 2**30 if cuda else float("nan")
    if cuda:
        torch.cuda.empty_cache()
    return {"tokens": length, "status": status, "seconds": round(seconds, 3),
            "peak_gib": round(peak, 2)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lengths", default="16384,24576,32768,40960")
    ap.add_argument("--backends", default="flash,cudnn,efficient,math,eager")
    ap.add_argument("--layers", type=int, default=28)
    ap.add_argument("--vocab", type=int, default=8192)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--json", type=Path, required=True)
    a = ap.parse_args()
    import torch

    lengths = [int(x) for x in a.lengths.split(",")]
    cuda = a.device.startswith("cuda")
    doc: dict = {"device_name": torch.cuda.get_device_name(0) if cuda else a.device,
                 "torch": torch.__version__,
                 "total_gib": round(torch.cuda.get_device_properties(0).total_memory / 2**30, 1)
                 if cuda else None, "lengths": lengths, "backends": {}}
    models: dict = {}
    for name in a.backends.split(","):
        attn = "eager" if name == "eager" else "sdpa"
        if attn not in models:
            models.clear()  # one model on the device at a time
            if cuda:
                torch.cuda.empty_cache()
            models[attn] = build(attn, a.layers, a.vocab, a.device)
        runs, longest = [], None
        for length in lengths:
            r = attempt(models[attn], SDPA.get(name), length, a.vocab, a.device)
            runs.append(r)
            print(f"{name:9s} {length:6d} {r['status'][:70]:70s} {r['seconds']:8.2f} s "
                  f"{r['peak_gib']:7.2f} GiB", flush=True)
            if r["status"] != "ok":
                break
            longest = length
        doc["backends"][name] = {"longest": longest, "attempts": runs}
    a.json.write_text(json.dumps(doc, indent=1))
    print(json.dumps({k: v["longest"] for k, v in doc["backends"].items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
