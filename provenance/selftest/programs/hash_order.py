"""A user's own script that re-executes itself with PYTHONHASHSEED taken from MY_SEED, so
that its set order repeats: what it prints follows the seed. The seed is taken from a copy
of the environment (never through os.getenv), and the child is told by an argument.

    MY_SEED=1 python hash_order.py --out result.txt
"""

import argparse
import os
import sys


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--child", action="store_true")
    args = ap.parse_args()
    if not args.child:
        env = dict(os.environ)
        env["PYTHONHASHSEED"] = env.get("MY_SEED", "0")
        os.execve(sys.executable, [sys.executable, *sys.argv, "--child"], env)
    words = {f"word{i}" for i in range(16)}
    with open(args.out, "w", encoding="utf-8") as fh:
        fh.write(" ".join(words) + "\n")
    print(len(words), "words")


if __name__ == "__main__":
    main()
