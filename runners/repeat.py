"""Repeatability: one configuration N times in separate processes, compared block by block.

The verdict is "bit-identical", or the first (layer, block) where a repeat differs from the
first run, with the largest absolute difference of the scores in that block.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from provenance.model.disclosure import Aggregation, DisclosureCard, NotApplicable, Positions
from runners.cards import NOT_CALIBRATED, checkpoint, environment, full_vocabulary, text, top_k
from runners.engines import EngineConfig
from runners.execute import WorkerRun, execute
from runners.hidden import to_float32
from runners.launch import Check, Launcher, standalone
from runners.prepare import Prepared
from runners.results import write_result


@dataclass
class RepeatOutcome:
    identical: bool
    verdict: dict[str, Any]
    runs: list[WorkerRun]
    result_path: Path


def _layer_order(digests: dict[str, list[str]]) -> list[str]:
    def key(name: str) -> tuple[int, int, str]:
        if name.startswith("hidden."):
            return (0, int(name.split(".")[1]), name)
        return (1, 0 if name == "final_norm" else 1, name)

    return sorted(digests, key=key)


def compare_repeats(runs: list[WorkerRun], block: int) -> dict[str, Any]:
    """First (layer, block) where any repeat differs from run 0, or bit-identical."""
    base = runs[0]
    for i, other in enumerate(runs[1:], start=1):
        if set(other.meta["digests"]) != set(base.meta["digests"]):
            return {"verdict": "differs", "run": i, "layer": "(layer set differs)"}
    for layer in _layer_order(base.meta["digests"]):
        for b, digest in enumerate(base.meta["digests"][layer]):
            for i, other in enumerate(runs[1:], start=1):
                if other.meta["digests"][layer][b] != digest:
                    return _differs(base, other, i, layer, b, block)
    return {"verdict": "bit-identical", "layers": len(base.meta["digests"]),
            "blocks": len(next(iter(base.meta["digests"].values())))}


def _values(run: WorkerRun) -> tuple[str, np.ndarray]:
    """What a differing block's size is measured on: the scores, or for a hidden-state
    result (no score rows) the final hidden states."""
    if len(run.scores) or run.final_hidden is None:
        return "scores", run.scores.astype(np.float64)
    dtype = run.meta["storage"]["hidden_dtype"]
    return "final_hidden", to_float32(run.final_hidden, dtype).astype(np.float64)


def _differs(base: WorkerRun, other: WorkerRun, i: int, layer: str, b: int,
             block: int) -> dict[str, Any]:
    name, x = _values(base)
    _, y = _values(other)
    s, e = b * block, (b + 1) * block
    return {"verdict": "differs", "run": i, "layer": layer, "block": b,
            "positions": [s, min(e, len(x))],
            f"{name}_max_abs_diff_in_block": float(np.nanmax(np.abs(y[s:e] - x[s:e])))
            if e > s and len(x[s:e]) else None,
            f"{name}_max_abs_diff": float(np.nanmax(np.abs(y - x))) if len(x) else None}


def repeat_card(config: EngineConfig, prep: Prepared, runs: list[WorkerRun],
                n: int) -> DisclosureCard:
    block = int(runs[0].meta["block"])
    vocab = full_vocabulary() if runs[0].meta["full_vocab"] else \
        top_k(False, "only the entries the engine returned are stored and compared")
    return DisclosureCard(
        reference_checkpoint=checkpoint(prep, config.spec),
        runtime_environment=environment([r.run_id for r in runs],
                                        {"run0": runs[0].meta["runtime"]}),
        evaluation_text=text(prep),
        calibration_data=NOT_CALIBRATED,
        context_lengths=(int(len(prep.ids)),),
        sampled_positions=Positions(count=int(len(prep.ids) - 1),
                                    rule="every next-token position of one teacher-forced "
                                         "sequence, none skipped"),
        kl_direction=NotApplicable("repeatability compares raw bytes, no KL"),
        vocabulary_truncation=vocab,
        aggregation=Aggregation(method=f"sha256 per layer per block of {block} positions; "
                                       f"{n} runs in separate processes; the first differing "
                                       "(layer, block) is reported", block=block, runs=n),
    )


def run_repeat(config: EngineConfig, prep: Prepared, n: int, workdir: Path, result: Path,
               *, check: Check, block: int = 256,
               launcher: Launcher = standalone) -> RepeatOutcome:
    """`check` (the gate, nothing varied; `ungated` for standalone runs) confirms each
    repeat ran in run 0's environment."""
    if n < 2:
        raise ValueError("a repeatability check needs n >= 2")
    runs = [execute(config, prep, workdir, f"run{i}", block, launcher) for i in range(n)]
    t0 = time.perf_counter()
    comparisons = [check(runs[0], r) for r in runs[1:]]
    t1 = time.perf_counter()
    verdict = compare_repeats(runs, block)
    timings = {"gate_seconds": round(t1 - t0, 3),
               "compare_seconds": round(time.perf_counter() - t1, 3),
               "workers": [r.meta.get("timings") or {} for r in runs]}
    meta = {
        "engines": [config.to_json()],
        "runtime": runs[0].meta["runtime"],
        "model_digest": prep.model_digest,
        "tokenizer_digest": prep.tokenizer_digest,
        "text_digest": prep.text_digest,
        "positions": {"n_tokens": int(len(prep.ids)), "scored": int(len(prep.ids) - 1),
                      "block": block},
        "summary": verdict,
        "comparisons": comparisons,
        "runs": [{"run_id": r.run_id, "digests": r.meta["digests"],
                  "seconds": r.meta["seconds"]} for r in runs],
        "notes": runs[0].meta.get("notes", []),
        "timings": timings,
    }
    arrays = {"ids": prep.ids}
    path = write_result(result, "repeat", meta, arrays, repeat_card(config, prep, runs, n))
    return RepeatOutcome(verdict["verdict"] == "bit-identical", verdict, runs, path)
