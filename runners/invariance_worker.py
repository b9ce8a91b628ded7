"""One invariance run in its own process: `python -m runners.invariance_worker --engine NAME
[--OPTION V]... --model DIR --plan PLAN.json --out DIR`.

Loads the engine once and runs the plan's calls in order (each call a batch of prompts,
optionally after a prefix-cache reset, optionally with the planted control op switched on),
writing OUT/scores.npz (per call and prompt: lp, top1, top1lp, gen, genlp) and
OUT/invariance.json (the calls, their seconds and token counts, what the session resolved).
What the engine resolved is read by `prov exec`'s in-process probe, as for any program.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from runners.engines import EngineConfig, EngineError
from runners.engines.base import add_engine_arguments, engine_from_args
from runners.worker_output import write_worker_output

WORKER_FORMAT = "prov-invariance-worker/1"
META = "invariance.json"


def run(config: EngineConfig, model: str, plan: dict, out: Path) -> dict:
    from runners.engines.batched import open_session

    started = time.time()
    session = open_session(config, model, int(plan["max_len"]))
    loaded = time.time() - started
    arrays: dict[str, np.ndarray] = {}
    calls = []
    for ci, call in enumerate(plan["calls"]):
        if call.get("reset_cache"):
            session.reset_cache()
        session.set_plant(call.get("plant"))
        prompts = [plan["prompts"][i] for i in call["prompts"]]
        t0 = time.perf_counter()
        obs = session.run(prompts, int(plan["max_new"]), bool(call["prompt_logprobs"]))
        seconds = time.perf_counter() - t0
        for j, o in enumerate(obs):
            for key, value in o.items():
                arrays[f"c{ci}.p{j}.{key}"] = value
        calls.append({"tag": call["tag"], "seconds": round(seconds, 6),
                      "prompt_tokens": sum(map(len, prompts)),
                      "generated_tokens": int(sum(len(o["gen"]) for o in obs))})
    session.set_plant(None)
    meta = {"format": WORKER_FORMAT, "config": config.to_json(), "spec": config.spec,
            "calls": calls, "load_seconds": round(loaded, 3),
            "max_num_batched_tokens": getattr(session, "max_num_batched_tokens", None),
            "prefix_cache": session.prefix_cache, "chunked_prefill": session.chunked_prefill}
    write_worker_output(out, arrays, META, meta)
    return meta


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m runners.invariance_worker")
    add_engine_arguments(ap)
    ap.add_argument("--model", required=True)
    ap.add_argument("--plan", required=True, type=Path, help="the calls to run (JSON)")
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args(argv)
    try:
        run(engine_from_args(args), args.model, json.loads(args.plan.read_text()), args.out)
    except EngineError as exc:
        print(f"runners.invariance_worker: error: {exc}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
