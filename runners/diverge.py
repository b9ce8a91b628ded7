"""Divergence: reference vs candidate on the same token ids.

Per position: top-1 agreement, the reference's top-1 margin and top-1 probability, KL both
ways over the full vocabulary (or the truncated estimate with a residual bucket, disclosed),
Delta-p and the log-probabilities of the actual next token, the ordered top-10 lists. Then
(runners/analysis/summary.py) the first disagreement, clusters mapped to text, llama.cpp's and
exllamav3's figures with their errors, block-bootstrap confidence intervals, the self-KL floor
of the storage format, and the noise floor: the reference against a second execution of its
own configuration (one more reference run; `noise_floor=False` skips it and says so).
"""

from __future__ import annotations

import time
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
from provenance.model.errors import ProvError
from provenance.model.policy import Policy, not_computable
from runners.analysis.segments import annotate_clusters, by_type, position_segments
from runners.analysis.summary import NO_REPEAT, analyse, summarise
from runners.cards import NOT_CALIBRATED, checkpoint, environment, full_vocabulary, text, top_k
from runners.engines import EngineConfig
from runners.execute import WorkerRun, execute
from runners.hidden_analysis import (
    HiddenStateError,
    analyse_runs,
    analysis_device,
    floor_text,
    is_hidden,
)
from runners.launch import Check, Launcher, standalone
from runners.prepare import Prepared
from runners.results import write_result


@dataclass
class DivergeOutcome:
    summary: dict[str, Any]
    arrays: dict[str, np.ndarray]
    ref: WorkerRun
    cand: WorkerRun
    result_path: Path


REPEAT = "ref_repeat"  # the worker directory of the reference's second execution
SKIPPED = ("skipped (--no-noise-floor): the reference was executed once, so nothing says "
           "how far it is from itself")


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
    return top_k(True, "KL over ids both engines returned plus one residual-mass bucket (a "
                       "lower bound of the full KL: summary.kl_lower_bound); top-K agreement, "
                       "label-in-top-K and perplexity need entries a side did not return are "
                       "marked not_computable, never estimated", k=min(ks) if ks else None)


def _bootstrap(summary: dict[str, Any]) -> Bootstrap:
    ci = summary["ci"]["kl_ref_cand_mean"]
    return Bootstrap(level=float(ci["level"]), block=int(ci["block"]),
                     resamples=int(ci["n_boot"]), seed=0)


AGGREGATION = (
    "per-position values (kl_ref_cand = KL(P_ref || P_cand), kl_cand_ref = KL(P_cand || "
    "P_ref), nats; delta_p = p_cand - p_ref of the actual next token) over every scored "
    "position: mean with llama.cpp's standard error sqrt(var / (n - 1)) and a block-bootstrap "
    "CI; median, max, min and the 99.9/99/95/90/75/25/10/5/1/0.1 percentiles (numpy linear "
    "interpolation, llama.cpp's); RMS delta-p; llama.cpp's same-top-p with its binomial "
    "error; exllamav3's top-K agreement (ordered top-K id lists equal, ties by lower id) and "
    "label-in-top-K for K = 1, 5, 10; KL by the reference's top-1 probability in [0,0.5), "
    "[0.5,0.9), [0.9,0.99), [0.99,1] (count, share, mean, median); llama.cpp's perplexity "
    "ratio PPL(cand)/PPL(ref) over the actual next tokens with ln ratio and "
    "Cor(ln PPL(cand), ln PPL(ref)); the noise floor (the reference against a second "
    "execution of its own configuration on the same positions: KL both ways, top-1 "
    "agreement, max |delta logit|, bit-identical positions)")


def diverge_card(ref: WorkerRun, cand: WorkerRun, prep: Prepared, summary: dict[str, Any],
                 repeat: WorkerRun | None = None) -> DisclosureCard:
    floor = summary["self_kl_floor"]
    rule = "every next-token position of one teacher-forced sequence, none skipped"
    if is_hidden(ref):
        rule += (f"; the storage floor on {floor['ref']['rows']} evenly spaced positions "
                 "whose engine logits each run kept")
    rule += ("; the noise floor on the same positions" if repeat is not None
             else "; no noise floor (the reference was executed once)")
    runs = [ref.run_id, cand.run_id] + ([repeat.run_id] if repeat is not None else [])
    return DisclosureCard(
        reference_checkpoint=checkpoint(prep, ref.config.spec),
        runtime_environment=environment(runs, {"reference": ref.meta["runtime"],
                                               "candidate": cand.meta["runtime"]}),
        evaluation_text=text(prep),
        calibration_data=NOT_CALIBRATED,
        context_lengths=(int(len(prep.ids)),),
        sampled_positions=Positions(count=int(summary["positions"]), rule=rule),
        kl_direction=Direction.BOTH,
        vocabulary_truncation=_diverge_vocab(ref, cand, floor),
        aggregation=Aggregation(method=AGGREGATION, bootstrap=_bootstrap(summary)),
    )


def analyse_pair(ref: WorkerRun, cand: WorkerRun, prep: Prepared, workdir: Path, gap: int = 8,
                 run_dirs: tuple[Path, Path] | None = None, repeat: WorkerRun | None = None,
                 no_repeat: str = NO_REPEAT
                 ) -> tuple[dict[str, Any], dict[str, np.ndarray], dict[str, Any]]:
    """(summary, arrays, analysis facts): score results on the host as before; hidden-state
    results rebuilt and analysed in chunks (on the GPU when there is one). run_dirs: the
    workers' output directories (default WORKDIR/ref and WORKDIR/cand). repeat: the
    reference's second execution, for the noise floor (else `no_repeat` says why not)."""
    if not (is_hidden(ref) or is_hidden(cand)):
        topk = tuple(r.config.get("topk") for r in (ref, cand))
        summary, arrays = analyse(ref.scores, cand.scores, prep.ids, prep.decode, gap=gap,
                                  topk=tuple(None if k is None else int(k) for k in topk),
                                  repeat=None if repeat is None else repeat.scores)
        if ref.final_hidden is not None:
            # post-norm hidden states + output-head digest: full logits can be rebuilt later
            arrays["ref_final_hidden"] = ref.final_hidden
        facts: dict[str, Any] = {"device": "cpu", "kernel": "numpy float64"}
    else:
        if not is_hidden(ref):
            raise HiddenStateError("one run stored hidden states, the other logits: rerun "
                                   "both with the same store= option")
        per_position, floor, facts, noise = analyse_runs(ref, cand, prep, workdir, run_dirs,
                                                         repeat)
        summary, arrays = summarise(per_position, prep.ids, floor, prep.decode, gap,
                                    noise=noise,
                                    vocab=int(ref.meta["storage"]["head"]["shape"][0]))
    if repeat is None:
        summary["noise_floor"] = not_computable(no_repeat)
    else:
        summary["noise_floor"]["repeat_run"] = repeat.run_id
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
                result: Path, *, check: Check, repeat_check: Check, block: int = 256,
                launcher: Launcher = standalone, gap: int = 8, policy: Policy | None = None,
                noise_floor: bool = True) -> DivergeOutcome:
    """Run both, let `check` (the gate; `ungated` for standalone runs) refuse before any
    figure is computed, then analyse.

    noise_floor: execute the reference configuration a second time (after the gate passed
    the pair: a refused pair costs no repeat) and measure it against the first on the same
    positions; `repeat_check` (the gate with nothing declared) must find the two runs
    comparable, since nothing may differ between two executions of one configuration."""
    ref = execute(ref_cfg, prep, workdir, "ref", block, launcher)
    cand = execute(cand_cfg, prep, workdir, "cand", block, launcher)
    t0 = time.perf_counter()
    comparison = check(ref, cand)
    gate_s = time.perf_counter() - t0
    repeat, comparison_repeat = None, None
    if noise_floor:
        if is_hidden(ref):
            analysis_device()  # an analysis that cannot run refuses before the repeat runs
        repeat = execute(ref_cfg, prep, workdir, REPEAT, block, launcher)
        t0 = time.perf_counter()
        comparison_repeat = _repeat_gate(repeat_check, ref, repeat)
        gate_s += time.perf_counter() - t0
    t1 = time.perf_counter()
    summary, arrays, facts = analyse_pair(ref, cand, prep, workdir, gap, repeat=repeat,
                                          no_repeat=SKIPPED)
    timings = {"gate_seconds": round(gate_s, 3),
               "analysis_seconds": round(time.perf_counter() - t1, 3),
               "workers": [r.meta.get("timings") or {} for r in (ref, cand, repeat) if r]}
    meta = {**diverge_meta(ref, cand, prep, comparison, summary, facts), "timings": timings}
    if repeat is not None:
        meta["runs"]["reference_repeat"] = repeat.run_id
        meta["comparison_repeat"] = comparison_repeat
    card = diverge_card(ref, cand, prep, summary, repeat)
    path = write_result(result, "diverge", meta, arrays, card, policy)
    return DivergeOutcome(summary, arrays, ref, cand, path)


def _repeat_gate(check: Check, ref: WorkerRun, repeat: WorkerRun) -> dict[str, Any]:
    """The gate between the reference and its repeat: one configuration, nothing declared."""
    try:
        return check(ref, repeat)
    except ProvError as exc:
        raise ProvError(f"noise floor: the reference's second execution is not comparable "
                        f"with its first: {exc}", exc.exit_code) from exc


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
