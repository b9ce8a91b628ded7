"""A user's own vLLM offline script: `LLM(model=DIR)`, one chat turn from a prompt file,
the default sampling parameters of the checkpoint (its generation_config.json) at
temperature `--temp`, the new token ids written out.

    python vllm_offline.py --model DIR --prompt prompt.txt --out result.txt
"""

import argparse

from vllm import LLM


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--prompt", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--temp", type=float, default=0.0)
    args = ap.parse_args()
    with open(args.prompt, encoding="utf-8") as fh:
        prompt = fh.read()
    llm = LLM(model=args.model, dtype="float32", max_model_len=256,
              max_num_batched_tokens=256, seed=0)
    params = llm.get_default_sampling_params()
    params.temperature = args.temp
    out = llm.chat([{"role": "user", "content": prompt}], params, use_tqdm=False)
    new = list(out[0].outputs[0].token_ids)
    with open(args.out, "w", encoding="utf-8") as fh:
        fh.write(" ".join(map(str, new)) + "\n")
    print(new)


if __name__ == "__main__":  # vLLM may spawn its engine core with multiprocessing
    main()
