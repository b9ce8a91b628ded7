"""One engine run in its own process: `python -m runners.worker --engine NAME [--OPTION V]...
--model DIR --tokens IDS.npy --out DIR`. Separate processes make repeats honest (no warm
state shared) and let each run go through the `prov exec` supervisor.

Writes OUT/scores.npz (scores, ids, final_hidden when available; a hidden-state result's
sampled engine logits, runners/hidden.py) and OUT/run.json (engine configuration, per-block
digests). What the engine resolved is read by `prov exec`'s in-process probe, as for any
program (the launcher hands it back from the run's record: launch.py).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

from runners.engines import EngineConfig, EngineError, load_engine
from runners.engines.base import add_engine_arguments, engine_from_args
from runners.worker_output import write_worker_output

WORKER_FORMAT = "prov-runner-worker/1"


def run(config: EngineConfig, model: str, tokens: Path, out: Path, block: int) -> dict:
    ids = [int(x) for x in np.load(tokens)]
    started = time.time()
    result = load_engine(config).score(model, ids, block)
    arrays = {"scores": result.scores, "ids": np.asarray(ids, dtype=np.int64)}
    if result.final_hidden is not None:
        arrays["final_hidden"] = result.final_hidden
    arrays.update(result.extra_arrays)
    meta = {
        "format": WORKER_FORMAT,
        "config": config.to_json(),
        "spec": config.spec,
        "kind": result.kind,
        "full_vocab": result.full_vocab,
        "block": block,
        "n_tokens": len(ids),
        "digests": result.digests,
        "head_digest": result.head_digest,
        "storage": result.storage or {"kind": "logits"},
        "notes": result.notes,
        "seconds": round(time.time() - started, 3),
        "timings": result.timings,
        "pid": os.getpid(),
    }
    write_worker_output(out, arrays, "run.json", meta)
    return meta


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m runners.worker")
    add_engine_arguments(ap)
    ap.add_argument("--model", required=True)
    ap.add_argument("--tokens", required=True, type=Path, help=".npy of int64 token ids")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--block", type=int, default=256)
    args = ap.parse_args(argv)
    try:
        run(engine_from_args(args), args.model, args.tokens, args.out, args.block)
    except EngineError as exc:
        print(f"runners.worker: error: {exc}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
