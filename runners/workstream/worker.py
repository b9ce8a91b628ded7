"""One replay of a rendered workstream under one configuration, in its own process:

    python -m runners.workstream.worker --engine NAME [--OPTION V]...
        [--kv-cache-dtype auto|int8|int4]
        --model DIR --job JOB.json --out DIR

JOB.json holds the rendered pieces (token ids), the tool-call turns and the turn-end ids.
The worker (1) scores the whole captured trace teacher-forced, (2) generates greedily at each
tool-call turn from the captured prefix (open loop), and (3) again with its own earlier
generations in the context in place of the captured ones (closed loop). It writes
OUT/scores.npz (scores, ids) and OUT/replay.json (generated ids, the engine's checks and
notes); what the engine resolved is read by `prov exec`'s probe, as for any program. Runs
in a vLLM venv too: it needs numpy and the engine, nothing of prov but `runners`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from runners.engines import EngineConfig, EngineError
from runners.engines.base import add_engine_arguments, engine_from_args
from runners.worker_output import write_worker_output

WORKER_FORMAT = "prov-replay-worker/1"


class _Transformers:
    def __init__(self, cfg: EngineConfig, model_dir: str, kv_cache: str) -> None:
        import copy

        import torch
        import transformers
        from transformers import AutoConfig, AutoModelForCausalLM

        self.torch, self.kv = torch, kv_cache
        # one thread: no OpenMP barrier spinning on a shared machine, and one reduction order
        torch.set_num_threads(int(os.environ.get("PROV_REPLAY_THREADS", "1")))
        attn = cfg.get("attn", "sdpa")
        dtype = cfg.get("dtype", "float32")
        torch.manual_seed(0)
        base = AutoConfig.from_pretrained(model_dir)
        self.model = AutoModelForCausalLM.from_pretrained(
            model_dir, config=copy.deepcopy(base), attn_implementation=attn,
            dtype=getattr(torch, dtype)).eval()
        resolved = getattr(self.model.config, "_attn_implementation", None)
        if resolved != attn:
            raise EngineError(f"asked for attn={attn} but the model resolved {resolved!r}")
        wdt = str(next(self.model.parameters()).dtype).removeprefix("torch.")
        if wdt != dtype:
            raise EngineError(f"asked for dtype={dtype} but weights are {wdt}")
        from runners.workstream.kvquant import cache_kwarg

        self.cache_kw = cache_kwarg(self.model)
        self.runtime = {
            "engine": "transformers", "transformers_version": transformers.__version__,
            "torch_version": torch.__version__,
            "attention_backend": {"requested": attn, "resolved": resolved},
            "dtype": {"requested": dtype, "resolved": wdt},
            "kv_cache_dtype": {"requested": kv_cache,
                               "resolved": wdt if kv_cache == "auto" else f"{kv_cache}-emulated"},
            "device": "cpu", "num_threads": torch.get_num_threads(),
            "decoding": "greedy (argmax, first index on ties), DynamicCache",
        }

    def _cache(self):
        from runners.workstream.kvquant import make_cache

        return make_cache(self.kv, self.model.config)

    def score(self, ids: list[int]) -> np.ndarray:
        torch = self.torch
        with torch.inference_mode():
            out = self.model(input_ids=torch.tensor([ids]), use_cache=True,
                             **{self.cache_kw: self._cache()})
        return out.logits[0, :-1].float().numpy()

    def generate(self, ctx: list[int], max_new: int, stop: set[int]) -> list[int]:
        torch = self.torch
        cache, gen = self._cache(), []
        x = torch.tensor([ctx])
        with torch.inference_mode():
            while len(gen) < max_new:
                out = self.model(input_ids=x, use_cache=True, **{self.cache_kw: cache})
                nxt = int(out.logits[0, -1].argmax())
                gen.append(nxt)
                if nxt in stop:
                    break
                x = torch.tensor([[nxt]])
        return gen


class _VLLM:
    def __init__(self, cfg: EngineConfig, model_dir: str, max_len: int) -> None:
        from runners.engines.vllm_engine import open_llm

        self.llm = open_llm(cfg, model_dir, max_len)
        self.vocab = self.llm.llm_engine.model_config.get_vocab_size()
        self.runtime = {"decoding": "greedy (temperature 0), one request at a time"}

    def score(self, ids: list[int]) -> np.ndarray:
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        p = SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=-1, detokenize=False)
        rows = self.llm.generate(TokensPrompt(prompt_token_ids=list(ids)), p,
                                 use_tqdm=False)[0].prompt_logprobs[1:]
        scores = np.full((len(rows), self.vocab), np.nan, dtype=np.float32)
        for j, row in enumerate(rows):
            scores[j, list(row.keys())] = [v.logprob for v in row.values()]
        return scores

    def generate(self, ctx: list[int], max_new: int, stop: set[int]) -> list[int]:
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        p = SamplingParams(max_tokens=max_new, temperature=0.0, stop_token_ids=sorted(stop),
                           detokenize=False, skip_special_tokens=False)
        out = self.llm.generate(TokensPrompt(prompt_token_ids=list(ctx)), p, use_tqdm=False)
        return list(out[0].outputs[0].token_ids)


def _strip_end(gen: list[int], stop: set[int]) -> tuple[list[int], bool]:
    if gen and gen[-1] in stop:
        return gen[:-1], True
    return gen, False


def run(cfg: EngineConfig, kv_cache: str, model: str, job_path: Path,
        out: Path) -> dict[str, Any]:
    job = json.loads(job_path.read_text())
    pieces: list[list[int]] = job["pieces"]
    turns = job["turns"]
    end = [int(x) for x in job["end_ids"]]
    stop = set(end)
    ids = [i for p in pieces for i in p]
    started = time.time()
    if cfg.engine == "vllm":
        if kv_cache != "auto":
            raise EngineError("kv_cache= is the transformers emulation; vLLM takes "
                              "kv_cache_dtype=")
        eng: Any = _VLLM(cfg, model, len(ids) + max(t["max_new"] for t in turns) + 64)
    else:
        eng = _Transformers(cfg, model, kv_cache)
    scores = eng.score(ids)
    open_loop, closed_loop = [], []
    for t in turns:  # open loop: the captured prefix every time
        ctx = [i for p in pieces[: t["prompt_piece"] + 1] for i in p]
        gen, stopped = _strip_end(eng.generate(ctx, t["max_new"], stop), stop)
        open_loop.append({"ids": gen, "stopped": stopped, "context_tokens": len(ctx)})
    ctx: list[int] = []
    by_completion = {t["completion_piece"]: (n, t) for n, t in enumerate(turns)}
    for k, piece in enumerate(pieces):  # closed loop: its own earlier calls stay in context
        if k not in by_completion:
            ctx += piece
            continue
        n, t = by_completion[k]
        same = ctx == [i for p in pieces[: t["prompt_piece"] + 1] for i in p]
        if same:  # the very same context as the open loop's: the same greedy tokens
            gen, stopped = open_loop[n]["ids"], open_loop[n]["stopped"]
        else:
            gen, stopped = _strip_end(eng.generate(ctx, t["max_new"], stop), stop)
        closed_loop.append({"ids": gen, "stopped": stopped, "context_tokens": len(ctx),
                            "context_as_captured": same})
        ctx += gen + end + t["tail"]
    meta = {
        "format": WORKER_FORMAT, "config": cfg.to_json(), "spec": cfg.spec,
        "kv_cache": kv_cache, "kind": "logprobs" if cfg.engine == "vllm" else "logits",
        "n_tokens": len(ids), "engine_notes": {cfg.engine: eng.runtime},
        "open_loop": open_loop, "closed_loop": closed_loop,
        "seconds": round(time.time() - started, 3), "pid": os.getpid(),
    }
    write_worker_output(out, {"scores": scores, "ids": np.asarray(ids, dtype=np.int64)},
                        "replay.json", meta)
    return meta


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m runners.workstream.worker")
    add_engine_arguments(ap)
    ap.add_argument("--kv-cache-dtype", default="auto", choices=("auto", "int8", "int4", "int2"),
                    help="the emulated KV-cache quantisation (kvquant.py)")
    ap.add_argument("--model", required=True)
    ap.add_argument("--job", required=True, type=Path)
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args(argv)
    try:
        run(engine_from_args(args), args.kv_cache_dtype, args.model, args.job, args.out)
    except EngineError as exc:
        print(f"runners.workstream.worker: error: {exc}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
