"""Divergence: reference vs candidate on the same token ids.

Per position: top-1 agreement, the reference's top-1 margin, KL both ways over the full
vocabulary (or the truncated estimate with a residual bucket, disclosed), Delta-p of the actual
next token. Then the first disagreement, clusters mapped to text, percentiles and
block-bootstrap confidence intervals, and the self-KL floor of the storage format.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from provenance.model.disclosure import (
    Aggregation,
    Bootstrap,
    Direction,
    DisclosureCard,
    Positions,
    Truncation,
)
from provenance.model.policy import Policy
from runners.analysis import (
    block_bootstrap_ci,
    find_clusters,
    first_disagreement,
    percentiles,
    position_stats,
    self_kl_floor,
)
from runners.analysis.segments import annotate_clusters, by_type, position_segments
from runners.cards import NOT_CALIBRATED, checkpoint, environment, full_vocabulary, text, top_k
from runners.engines import EngineConfig
from runners.execute import WorkerRun, execute
from runners.hidden_analysis import HiddenStateError, analyse_runs, floor_text, is_hidden
from runners.launch import Launcher, standalone
from runners.prepare import Prepared
from runners.results import write_result

NEAR_TIE = 0.01  # reference p(top1) - p(top2) below this: a disagreement there is a near-tie
STORAGE_DTYPE = "float32"


@dataclass
class DivergeOutcome:
    summary: dict[str, Any]
    arrays: dict[str, np.ndarray]
    ref: WorkerRun
    cand: WorkerRun
    result_path: Path


def analyse(ref: np.ndarray, cand: np.ndarray, ids: np.ndarray,
            decode: Callable[[int, int], str] | None = None, gap: int = 8,
            boot_block: int = 32) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Summary and per-position arrays for ref/cand scores ([T-1, V]) over ids ([T])."""
    st = position_stats(ref, cand, np.asarray(ids[1:], dtype=np.int64))
    arrays = {"ref_top1": st.ref_top1, "cand_top1": st.cand_top1, "margin": st.margin,
              "kl_ref_cand": st.kl_ref_cand, "kl_cand_ref": st.kl_cand_ref,
              "delta_p": st.delta_p, "truncated": st.truncated}
    floor = {"storage_dtype": STORAGE_DTYPE, "ref": self_kl_floor(ref, STORAGE_DTYPE),
             "cand": self_kl_floor(cand, STORAGE_DTYPE)}
    return summarise(arrays, ids, floor, decode, gap, boot_block)


def summarise(per_position: dict[str, np.ndarray], ids: np.ndarray, floor: dict[str, Any],
              decode: Callable[[int, int], str] | None = None, gap: int = 8,
              boot_block: int = 32) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Summary and the result's arrays from per-position values (ref_top1, cand_top1,
    margin, kl_ref_cand, kl_cand_ref, delta_p, truncated), however they were computed."""
    p = per_position
    agree = np.asarray(p["ref_top1"]) == np.asarray(p["cand_top1"])
    kl_rc, kl_cr, dp = (np.asarray(p[k], dtype=np.float64)
                        for k in ("kl_ref_cand", "kl_cand_ref", "delta_p"))
    margin = np.asarray(p["margin"], dtype=np.float64)
    truncated = np.asarray(p.get("truncated", np.zeros(len(agree), bool)), dtype=bool)
    first = first_disagreement(agree)
    clusters = find_clusters(agree, kl_rc, gap=gap, decode=decode)
    dis = ~agree
    summary: dict[str, Any] = {
        "positions": len(agree),
        "top1_agreement": float(agree.mean()),
        "disagreements": int(dis.sum()),
        "near_tie_disagreements": int((dis & (margin < NEAR_TIE)).sum()),
        "first_disagreement": first,
        "first_disagreement_text": decode(first + 1, first + 2) if (decode and first is not None)
        else None,
        "kl_ref_cand": percentiles(kl_rc),
        "kl_cand_ref": percentiles(kl_cr),
        "delta_p": {**percentiles(dp), "rms": float(np.sqrt(np.mean(dp ** 2)))},
        "ci": {
            "kl_ref_cand_mean": block_bootstrap_ci(kl_rc, block=boot_block),
            "top1_agreement": block_bootstrap_ci(agree.astype(np.float64), block=boot_block),
        },
        "truncated_positions": int(truncated.sum()),
        "clusters": [c.to_json() for c in clusters],
        "self_kl_floor": floor,
    }
    arrays = {
        "ids": np.asarray(ids, dtype=np.int64), "ref_top1": np.asarray(p["ref_top1"]),
        "cand_top1": np.asarray(p["cand_top1"]), "agree": agree, "margin": margin,
        "kl_ref_cand": kl_rc, "kl_cand_ref": kl_cr, "delta_p": dp, "truncated": truncated,
    }
    return summary, arrays


def _diverge_vocab(ref: WorkerRun, cand: WorkerRun, floor: dict[str, Any]) -> Truncation:
    if is_hidden(ref):
        head = ref.meta["storage"]["head"]
        return full_vocabulary(f"logits rebuilt from the stored {floor['storage_dtype']} "
                               f"(output head sha256 {head['sha256'][:16]}..., checked): "
                               f"{floor['rebuild']}; storage floor, rebuilt vs engine "
                               f"logits: {floor_text(floor)}", size=int(head["shape"][0]))
    if ref.meta["full_vocab"] and cand.meta["full_vocab"]:
        return full_vocabulary("renormalised in float64")
    ks = [int(k) for r in (ref, cand) if not r.meta["full_vocab"]
          and (k := r.config.get("topk")) is not None]
    return top_k(True, "KL over ids both engines returned plus one residual-mass bucket "
                       "(a lower bound of the full KL)", k=min(ks) if ks else None)


def _bootstrap(summary: dict[str, Any]) -> Bootstrap:
    ci = summary["ci"]["kl_ref_cand_mean"]
    return Bootstrap(level=float(ci["level"]), block=int(ci["block"]),
                     resamples=int(ci["n_boot"]), seed=0)


def diverge_card(ref: WorkerRun, cand: WorkerRun, prep: Prepared,
                 summary: dict[str, Any]) -> DisclosureCard:
    floor = summary["self_kl_floor"]
    rule = "every next-token position of one teacher-forced sequence, none skipped"
    if is_hidden(ref):
        rule += (f"; the storage floor on {floor['ref']['rows']} evenly spaced positions "
                 "whose engine logits each run kept")
    return DisclosureCard(
        reference_checkpoint=checkpoint(prep, ref.config.spec),
        runtime_environment=environment([ref.run_id, cand.run_id],
                                        {"reference": ref.meta["runtime"],
                                         "candidate": cand.meta["runtime"]}),
        evaluation_text=text(prep),
        calibration_data=NOT_CALIBRATED,
        context_lengths=(int(len(prep.ids)),),
        sampled_positions=Positions(count=int(summary["positions"]), rule=rule),
        kl_direction=Direction.BOTH,
        vocabulary_truncation=_diverge_vocab(ref, cand, floor),
        aggregation=Aggregation(
            method="per-position values (kl_ref_cand = KL(P_ref || P_cand), kl_cand_ref = "
                   "KL(P_cand || P_ref), nats); mean, percentiles (numpy linear "
                   "interpolation) and a block-bootstrap CI of the mean",
            bootstrap=_bootstrap(summary)),
    )


def analyse_pair(ref: WorkerRun, cand: WorkerRun, prep: Prepared, workdir: Path, gap: int = 8,
                 run_dirs: tuple[Path, Path] | None = None
                 ) -> tuple[dict[str, Any], dict[str, np.ndarray], dict[str, Any]]:
    """(summary, arrays, analysis facts): score results on the host as before; hidden-state
    results rebuilt and analysed in chunks (on the GPU when there is one). run_dirs: the
    workers' output directories (default WORKDIR/ref and WORKDIR/cand)."""
    if not (is_hidden(ref) or is_hidden(cand)):
        summary, arrays = analyse(ref.scores, cand.scores, prep.ids, prep.decode, gap=gap)
        if ref.final_hidden is not None:
            # post-norm hidden states + output-head digest: full logits can be rebuilt later
            arrays["ref_final_hidden"] = ref.final_hidden
        facts: dict[str, Any] = {"device": "cpu", "kernel": "numpy float64"}
    else:
        if not is_hidden(ref):
            raise HiddenStateError("one run stored hidden states, the other logits: rerun "
                                   "both with the same store= option")
        per_position, floor, facts = analyse_runs(ref, cand, prep, workdir, run_dirs)
        summary, arrays = summarise(per_position, prep.ids, floor, prep.decode, gap)
    add_segments(summary, arrays, prep)
    return summary, arrays, facts


def add_segments(summary: dict[str, Any], arrays: dict[str, np.ndarray],
                 prep: Prepared) -> None:
    """With a segments file beside the text: each position's segment, each cluster's
    segment type, and the figures per segment type."""
    if not prep.segments:
        return
    seg = position_segments(prep.offsets, prep.segments)
    annotate_clusters(summary["clusters"], prep.segments, seg)
    arrays["segment"] = seg.astype(np.int32)
    summary["segments"] = {
        "count": len(prep.segments),
        "types": sorted({s["type"] for s in prep.segments}),
        "by_type": by_type(prep.segments, seg, arrays["agree"], arrays["kl_ref_cand"],
                           summary["clusters"])}


def run_diverge(ref_cfg: EngineConfig, cand_cfg: EngineConfig, prep: Prepared, workdir: Path,
                result: Path, block: int = 256, launcher: Launcher = standalone,
                gap: int = 8, check: Callable[[WorkerRun, WorkerRun], dict] | None = None,
                policy: Policy | None = None) -> DivergeOutcome:
    """Run both, let `check` (the gate) refuse before any figure is computed, then analyse."""
    ref = execute(ref_cfg, prep, workdir, "ref", block, launcher)
    cand = execute(cand_cfg, prep, workdir, "cand", block, launcher)
    t0 = time.perf_counter()
    comparison = check(ref, cand) if check else {"gate": "not run (standalone)"}
    t1 = time.perf_counter()
    summary, arrays, facts = analyse_pair(ref, cand, prep, workdir, gap)
    timings = {"gate_seconds": round(t1 - t0, 3),
               "analysis_seconds": round(time.perf_counter() - t1, 3),
               "workers": [ref.meta.get("timings") or {}, cand.meta.get("timings") or {}]}
    meta = {**diverge_meta(ref, cand, prep, comparison, summary, facts), "timings": timings}
    path = write_result(result, "diverge", meta, arrays, diverge_card(ref, cand, prep, summary),
                        policy)
    return DivergeOutcome(summary, arrays, ref, cand, path)


def diverge_meta(ref: WorkerRun, cand: WorkerRun, prep: Prepared, comparison: dict,
                 summary: dict, facts: dict) -> dict[str, Any]:
    return {
        "engines": [ref.config.to_json(), cand.config.to_json()],
        "runtime": {"reference": ref.meta["runtime"], "candidate": cand.meta["runtime"]},
        "model_digest": prep.model_digest,
        "tokenizer_digest": prep.tokenizer_digest,
        "text_digest": prep.text_digest,
        "positions": {"n_tokens": int(len(prep.ids)), "scored": int(len(prep.ids) - 1)},
        "output_head_digest": ref.meta.get("head_digest"),
        "storage": {"reference": ref.meta.get("storage") or {"kind": "logits"},
                    "candidate": cand.meta.get("storage") or {"kind": "logits"}},
        "analysis": facts,
        "comparison": comparison,
        "summary": summary,
        "runs": {"reference": ref.run_id, "candidate": cand.run_id},
    }
