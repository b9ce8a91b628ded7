"""Score a text with vLLM: the log-probability of every token given the ones before it.

    python user_llm.py --config cfg.json --out scores.json

Written the way a user writes such a script (bench/gpu/user_script_check.py runs it under
`prov exec`, as a user's own program): everything that changes between runs is in the
config file, so the command line is the same every time. cfg.json:

    {"model": "/path/to/model", "text": "/path/to/eval.txt", "tokens": 4000,
     "attention_backend": "FLASH_ATTN", "kv_cache_dtype": "auto", "dtype": "bfloat16",
     "quantization": null, "enforce_eager": true, "gpu_memory_utilization": 0.5}

The output: per scored position the top-1 token id and the log-probability of the token
that came next in the text.
"""

import argparse
import json

from vllm import LLM, SamplingParams


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    with open(args.config) as fh:
        cfg = json.load(fh)

    engine_args = {"model": cfg["model"], "dtype": cfg.get("dtype", "auto"), "seed": 0,
                   "kv_cache_dtype": cfg.get("kv_cache_dtype", "auto"),
                   "max_model_len": cfg["tokens"] + 16,
                   "enforce_eager": cfg.get("enforce_eager", False),
                   "enable_prefix_caching": False}
    for key in ("attention_backend", "quantization", "gpu_memory_utilization"):
        if cfg.get(key) is not None:
            engine_args[key] = cfg[key]
    llm = LLM(**engine_args)

    with open(cfg["text"], encoding="utf-8") as fh:
        text = fh.read()
    ids = llm.get_tokenizer().encode(text)[:cfg["tokens"]]

    params = SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=1, detokenize=False)
    result = llm.generate({"prompt_token_ids": ids}, params, use_tqdm=False)[0]

    top1, target = [], []
    for pos, row in enumerate(result.prompt_logprobs[1:], start=1):  # position 0 has no context
        top1.append(next(t for t, lp in row.items() if lp.rank == 1))
        target.append(row[ids[pos]].logprob)

    with open(args.out, "w") as fh:
        json.dump({"positions": len(top1), "top1": top1, "target_logprob": target}, fh)
    print(f"scored {len(top1)} positions, mean logprob {sum(target) / len(target):.4f}")


# vLLM may start its engine in a spawned process, which re-imports this file
if __name__ == "__main__":
    main()
