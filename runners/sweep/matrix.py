"""The gate across nodes and the matrix: every cell against the reference cell.

A cell is compared only if its first run's manifest (plus the libraries both runs loaded)
differs from the reference's in nothing but the swept keys. Anything else — another driver,
another package version, a numerics-relevant environment variable set differently on its
node — flags the cell: its runs stay recorded, but it gets no agreement or KL, and the
differing keys are listed with both values. A passing comparison is stored like
`prov compare`'s.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np

# What each engine option is called in the gate's presets (an online quantization changes
# the weights the engine holds and the quantization config it reports).
AXIS_PRESETS: dict[str, tuple[str, ...]] = {
    "attn": ("attention-backend",),
    "attention_backend": ("attention-backend",),
    "sdpa_kernel": ("attention-backend",),
    "dtype": ("dtype",),
    "kv_cache_dtype": ("kv-cache-dtype",),
    "quantization": ("weights", "quantization"),
}
# Ray's per-process bookkeeping in every task's environment (env.RAY_* is identity): which
# job and raylet a worker belongs to says nothing about numerics. Listed as ignored in each
# comparison record, never dropped silently.
RAY_BOOKKEEPING = ("env.RAY_JOB_ID", "env.RAY_RAYLET_PID", "env.RAY_CLIENT_MODE",
                   "env.RAY_LD_PRELOAD_ON_WORKERS")


def vary_for(axes: list[str], extra: list[str]) -> list[str]:
    out = [p for a in axes for p in AXIS_PRESETS.get(a, (f"run.params.{a}",))]
    out += [k for a in axes if a not in AXIS_PRESETS
            for k in (f"runtime.*.{a}", f"code.args.{a}")]
    return list(dict.fromkeys(out + list(extra)))


def gate_cell(store, ref_run: str, run: str, vary: list[str]) -> dict[str, Any]:
    from provenance.gate import compare_runs

    c = compare_runs(store, ref_run, run, vary, extra_ignore=RAY_BOOKKEEPING)
    if not c.ok:
        return {"gate": "flagged", "differing": {ch.key: {"reference": ch.a, "cell": ch.b}
                                                 for ch in c.result.refused}}
    doc = c.to_json()
    return {"gate": "passed", "comparison_record": c.record,
            "varied_keys": sorted(k for v in doc["varied"].values() for k in v["keys"]),
            "ignored_keys": sorted(doc["ignored"])}


def load_scores(store, digest: str) -> np.ndarray:
    with np.load(io.BytesIO(store.get_bytes(digest))) as npz:
        return npz["scores"]


def compare_scores(ref: np.ndarray, cand: np.ndarray, ids: np.ndarray) -> dict[str, Any]:
    from runners.diverge import analyse

    s, _ = analyse(ref, cand, ids)
    return {"top1_agreement": s["top1_agreement"], "disagreements": s["disagreements"],
            "first_disagreement": s["first_disagreement"],
            "kl_ref_cand_mean": s["kl_ref_cand"]["mean"],
            "kl_ref_cand_max": s["kl_ref_cand"]["max"],
            "kl_ref_cand_p99": s["kl_ref_cand"]["p99"],
            "kl_cand_ref_mean": s["kl_cand_ref"]["mean"],
            "kl_cand_ref_p99": s["kl_cand_ref"]["p99"],
            "kl_cand_ref_max": s["kl_cand_ref"]["max"],
            "kl_ref_cand_mean_ci": s["ci"]["kl_ref_cand_mean"],
            "positions": s["positions"]}
