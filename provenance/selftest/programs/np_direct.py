"""A user's own numpy script: an array read with `numpy.load`, a prompt read with `open`,
the array times a vector made from the prompt's bytes.

    python np_direct.py --array data/weights.npy --prompt prompt.txt --out result.txt
"""

import argparse

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--array", required=True)
    ap.add_argument("--prompt", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    w = np.load(args.array)
    with open(args.prompt, "rb") as fh:
        data = fh.read()
    v = np.zeros(w.shape[1], dtype=w.dtype)  # every byte of the prompt counts
    np.add.at(v, np.arange(len(data)) % w.shape[1], np.frombuffer(data, dtype=np.uint8))
    y = w @ v
    with open(args.out, "w", encoding="utf-8") as fh:
        fh.write(" ".join(f"{x:.9e}" for x in y) + "\n")
    print(float(y.sum()))


if __name__ == "__main__":
    main()
