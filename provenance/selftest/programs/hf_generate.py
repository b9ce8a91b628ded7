"""A user's own transformers script: load a checkpoint directory, chat-format a prompt read
from a file, generate, write the new token ids.

    python hf_generate.py --model DIR --prompt prompt.txt --out result.txt [--temp 0.9]

The temperature is `--temp`, unless MY_TEMPERATURE is set in the environment. Run as the
selftest's user-program rows run it (prov selftest identity --programs).
"""

import argparse
import os

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--prompt", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--temp", type=float, default=0.0)
    args = ap.parse_args()
    temperature = float(os.getenv("MY_TEMPERATURE", args.temp))
    with open(args.prompt, encoding="utf-8") as fh:
        prompt = fh.read()
    tok = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForCausalLM.from_pretrained(args.model)
    text = tok.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False,
                                   add_generation_prompt=True)
    ids = torch.tensor([tok.encode(text)])
    torch.manual_seed(0)
    sampling = {"do_sample": True, "temperature": temperature} if temperature > 0 else {
        "do_sample": False}
    out = model.generate(ids, attention_mask=torch.ones_like(ids), **sampling)
    new = out[0, ids.shape[1]:].tolist()
    with open(args.out, "w", encoding="utf-8") as fh:
        fh.write(" ".join(map(str, new)) + "\n")
    print(new)


if __name__ == "__main__":
    main()
