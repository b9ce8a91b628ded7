"""A user's own script that reads a checkpoint with `safetensors.torch.load_file` and
multiplies its matrices by a vector made from a prompt file.

    python st_direct.py --model DIR --prompt prompt.txt --out result.txt
"""

import argparse

import torch
from safetensors.torch import load_file


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--prompt", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    weights = load_file(args.model + "/model.safetensors")
    with open(args.prompt, "rb") as fh:
        seed = sum(fh.read())
    torch.manual_seed(seed)
    sums = []
    for name in sorted(weights):
        w = weights[name].double()
        if w.dim() == 2:
            v = torch.randn(w.shape[1], dtype=torch.float64)
            sums.append(f"{name} {float((w @ v).sum()):.9e}")
    with open(args.out, "w", encoding="utf-8") as fh:
        fh.write("\n".join(sums) + "\n")
    print(len(sums), "matrices")


if __name__ == "__main__":
    main()
