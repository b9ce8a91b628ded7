"""Part big of bench/gpu/invariance.py: the study's size with vLLM's dummy weights.

A dense ~27B Qwen3 shape (hidden 5120, 64 layers, 40 query / 8 KV heads of 128, MLP 22016,
151,936 outputs) as a config.json only, loaded with load_format=dummy (no checkpoint), at
~100k tokens of text (top-k prompt logprobs: a full-vocabulary row per position would be
60 GB): `prov run repeat` (2 runs) and `prov run diverge` FLASH_ATTN vs TRITON_ATTN, each
with prov's time beside the workers' (engine start + forward pass) and the bytes stored.
Dummy weights: the agreement figures are not model quality, and no invariance probe is run
on them (they cannot show batch effects: issue 28).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.gpu import vllm_grid_steps as steps
from bench.gpu.vllm_grid_rest import _result, _runs

SHAPE_GPU = {"hidden_size": 5120, "num_hidden_layers": 64, "num_attention_heads": 40,
             "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 22016,
             "vocab_size": 4096}
# Not Qwen3's 151,936 outputs: the vLLM engine stores top-k prompt logprobs as a dense
# [positions, vocabulary] float32 array (NaN where not returned), 60 GB per run at 100k x
# 151,936; at 4,096 it is 1.6 GB. The lm_head is ~1% of a 27B forward pass.
SHAPE_CPU = {"hidden_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
             "num_key_value_heads": 2, "head_dim": 32, "intermediate_size": 256,
             "vocab_size": 1024}


def write_model(clock, out: Path, tokens: int, cpu: bool) -> dict[str, Any]:
    """Tokenizer and an evaluation text of at least `tokens` tokens (divergence.py's), then
    the shape's config.json; no weights (vLLM's dummy loader makes them)."""
    shape = SHAPE_CPU if cpu else SHAPE_GPU
    code = ("import sys, json; from pathlib import Path; sys.path.insert(0, '.');"
            "from bench.gpu.divergence import eval_text; from transformers import Qwen3Config;"
            "out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True);"
            "_, n = eval_text(out, int(sys.argv[2]), False);"
            "shape = json.loads(sys.argv[3]);"
            "Qwen3Config(**shape, architectures=['Qwen3ForCausalLM'],"
            " max_position_embeddings=max(131072, n + 64),"
            " rope_parameters={'rope_type': 'default', 'rope_theta': 1000000.0},"
            " rms_norm_eps=1e-6, tie_word_embeddings=False, use_sliding_window=False,"
            " dtype='bfloat16').save_pretrained(out); print(n)")
    r = steps.sh(clock, [steps.PY, "-c", code, str(out), str(tokens), json.dumps(shape)], 240)
    h, n_l, v, m = (shape[k] for k in ("hidden_size", "num_hidden_layers", "vocab_size",
                                        "intermediate_size"))
    kv = shape["num_key_value_heads"] * shape["head_dim"]
    q = shape["num_attention_heads"] * shape["head_dim"]
    params = n_l * (h * (q + 2 * kv) + q * h + 3 * h * m) + 2 * v * h
    return {"rc": r.get("rc"), "seconds": r.get("seconds"), "shape": shape,
            "params": params, "text_tokens": (r.get("stdout") or "").strip()[-20:],
            "weights": "load_format=dummy: vLLM's random init, no checkpoint"}


def _store_bytes() -> int:
    import os

    root = Path(os.environ.get("PROV_STORE", ".prov"))
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) if root.exists() else 0


def _tree_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def _costs(doc: dict[str, Any], wall: float | None) -> dict[str, Any]:
    """Worker seconds (engine start + forward pass, per run) against the command's wall
    time: the rest is prov's (launch, record, gate, analysis, result)."""
    runs = doc.get("runs")
    secs = [r.get("seconds") for r in runs] if isinstance(runs, list) else None
    return {"worker_seconds": secs, "wall_seconds": wall,
            "prov_seconds": round(wall - sum(secs), 1) if wall and secs else None}


def shares(timings: dict[str, Any] | None) -> dict[str, Any]:
    """prov's own steps (the gate, the comparison or analysis) beside the forward passes the
    workers timed (vLLM's generate call alone, engine start apart)."""
    t = timings or {}
    workers = t.get("workers") or []
    forward = [w.get("forward_seconds") for w in workers]
    start = [w.get("engine_start_seconds") for w in workers]
    own = {k: t[k] for k in ("gate_seconds", "compare_seconds", "analysis_seconds") if k in t}
    out: dict[str, Any] = {"forward_seconds": forward, "engine_start_seconds": start, **own}
    if forward and None not in forward and own:
        mean = sum(forward) / len(forward)
        out["prov_seconds_over_one_forward"] = round(sum(own.values()) / mean, 4)
    return out


def run_big(clock, args, _model: Path) -> dict[str, Any]:
    model = args.work / "big-model"
    res: dict[str, Any] = {"model": write_model(clock, model, args.big_tokens, args.cpu)}
    if res["model"]["rc"] != 0:
        return res
    dtype = "float32" if args.cpu else "bfloat16"
    mem = "" if args.cpu else ",gpu_memory_utilization=0.9"
    fa, tr = ("CPU_ATTN", "CPU_ATTN") if args.cpu else ("FLASH_ATTN", "TRITON_ATTN")

    def eng(backend: str) -> str:
        return (f"vllm:dtype={dtype},attention_backend={backend},load_format=dummy,"
                f"topk={args.big_topk}{mem}")

    if "repeat" in args.big_steps.split(","):
        res["repeat"] = _repeat(clock, args, model, eng(fa))
    if "diverge" in args.big_steps.split(","):
        res["diverge"] = _diverge(clock, args, model, eng(fa), eng(tr))
    return res


def _repeat(clock, args, model: Path, spec: str) -> dict[str, Any]:
    before = _store_bytes()
    out = steps.sh(clock, ["prov", "run", "repeat", "--engine", spec, "--model", str(model),
                           "--text", str(model / "eval.txt"), "--n", "2", "--max-tokens",
                           str(args.big_tokens), "--workdir", str(args.work / "big-rep-work"),
                           "--out", str(args.work / "big-rep"), "--json"], 240)
    doc = _result(args.work / "big-rep")
    return {"rc": out.get("rc"), "verdict": (steps._json(out) or {}).get("verdict"),
            "positions": doc.get("positions"), "runs": _runs(args.work / "big-rep"),
            **_costs(doc, out.get("seconds")), "steps": shares(doc.get("timings")),
            "stored_bytes_per_run": (_store_bytes() - before) // 2,
            "result_bytes": _tree_bytes(args.work / "big-rep"),
            "worker_output_bytes_per_run": _tree_bytes(args.work / "big-rep-work") // 2,
            "stderr": out.get("stderr") if out.get("rc") not in (0, 1) else None}


def _diverge(clock, args, model: Path, ref: str, cand: str) -> dict[str, Any]:
    argv = ["prov", "run", "diverge", "--ref", ref, "--cand", cand, "--model",
            str(model), "--text", str(model / "eval.txt"), "--max-tokens", str(args.big_tokens),
            "--workdir", str(args.work / "big-div-work"), "--out", str(args.work / "big-div"),
            "--json"] + ([] if args.cpu else ["--vary", "attention-backend"])
    out = steps.sh(clock, argv, 400)
    s = steps._json(out) or {}
    d = _result(args.work / "big-div")
    runs = [w.get("seconds") for w in _worker_json(args.work / "big-div-work")]
    return {"rc": out.get("rc"), "ref": ref, "cand": cand,
            "top1_agreement": s.get("top1_agreement"),
            "first_disagreement": s.get("first_disagreement"),
            "kl_ref_cand_mean": (s.get("kl_ref_cand") or {}).get("mean"),
            "positions": s.get("positions"), "analysis": d.get("analysis"),
            "worker_seconds": runs, "wall_seconds": out.get("seconds"),
            "prov_seconds": round(out["seconds"] - sum(runs), 1)
            if out.get("seconds") and runs and None not in runs else None,
            "steps": shares(d.get("timings")),
            "note": "dummy weights: agreement is not model quality",
            "stderr": out.get("stderr") if out.get("rc") else None}


def _worker_json(work: Path) -> list[dict[str, Any]]:
    out = []
    for side in ("ref", "cand"):
        p = work / side / "run.json"
        out.append(json.loads(p.read_text()) if p.is_file() else {})
    return out
