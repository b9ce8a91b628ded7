"""Greedy generation for replay, measured side by side on the replay demo model (CPU):

  cached   — the worker's loop: one forward over the prompt, then one token at a time with a
             DynamicCache (what `prov run replay` does)
  no-cache — recompute the whole context for every new token (no cache to perturb)
  int4     — the worker's loop with the emulated int4 KV cache (quantize-dequantize on write)

Each generates every captured tool-call completion of the bundled workstream from its
captured prefix; prints seconds (best of --repeat), tokens/s and ratios, and whether the
cached and uncached loops produced the same tokens.

    .venv/bin/python bench/bench_replay.py [--model DIR] [--repeat 3] [--threads 1]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", type=Path,
                    default=Path(os.environ.get("PROV_TEST_CACHE",
                                                Path.home() / ".cache" / "prov-tests"))
                    / "replay-model")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()

    import torch
    from transformers import AutoModelForCausalLM

    from runners.replay import build_job
    from runners.workstream import EXAMPLES, load_workstream
    from runners.workstream.demo_model import ensure
    from runners.workstream.kvquant import cache_kwarg, make_cache
    from runners.workstream.render import render_workstream
    from runners.workstream.template import find_template

    torch.set_num_threads(args.threads)
    ws_path = Path(EXAMPLES) / "file_agent.json"
    model_dir = ensure(args.model, ws_path)
    r = render_workstream(load_workstream(ws_path), find_template(model_dir),
                          model_dir / "tokenizer.json")
    job = build_job(r)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    stop = set(r.end_ids)
    kw = cache_kwarg(model)
    prompts = [([i for p in job["pieces"][: t["prompt_piece"] + 1] for i in p], t["max_new"])
               for t in job["turns"]]

    def cached(ctx, n, kind="auto"):
        cache, gen, x = make_cache(kind, model.config), [], torch.tensor([ctx])
        while len(gen) < n:
            nxt = int(model(input_ids=x, use_cache=True, **{kw: cache}).logits[0, -1].argmax())
            gen.append(nxt)
            if nxt in stop:
                break
            x = torch.tensor([[nxt]])
        return gen

    def uncached(ctx, n):
        gen = []
        while len(gen) < n:
            nxt = int(model(input_ids=torch.tensor([ctx + gen]), use_cache=False)
                      .logits[0, -1].argmax())
            gen.append(nxt)
            if nxt in stop:
                break
        return gen

    ways = {"cached": lambda c, n: cached(c, n), "no-cache": uncached,
            "int4": lambda c, n: cached(c, n, "int4")}
    best, outs = {}, {}
    with torch.inference_mode():
        for _ in range(args.repeat):  # interleaved rounds: load changes hit all ways alike
            for name, fn in ways.items():
                t0 = time.perf_counter()
                outs[name] = [fn(c, n) for c, n in prompts]
                best[name] = min(best.get(name, float("inf")), time.perf_counter() - t0)
    n_tok = sum(len(g) for g in outs["cached"])
    ctx_tok = sum(len(c) for c, _ in prompts)
    print(f"model {model_dir}  turns {len(prompts)}  prompt tokens {ctx_tok}  "
          f"generated {n_tok}  threads {args.threads}  best of {args.repeat}")
    print(f"{'way':10} {'seconds':>9} {'tokens/s':>9} {'vs cached':>10}")
    for name in ways:
        print(f"{name:10} {best[name]:9.3f} {n_tok / best[name]:9.1f} "
              f"{best[name] / best['cached']:9.2f}x")
    print("cached == no-cache tokens:", outs["cached"] == outs["no-cache"])
    print("int4 == cached tokens:", outs["int4"] == outs["cached"])


if __name__ == "__main__":
    main()
