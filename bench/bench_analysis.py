"""Analysis throughput: vectorised per-position statistics vs naive per-position loops.

Same data for every method (synthetic logits of two engines that nearly agree); each method
computes top-1 agreement, KL both ways, the reference margin and Delta-p of the next token.
Prints seconds, positions x vocab per second, and the ratio to each naive loop, plus the
largest difference between methods (they must agree).

    .venv/bin/python bench/bench_analysis.py [--positions 1024] [--vocab 2048] [--repeat 3]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from runners.analysis import position_stats


def naive_numpy_loop(ref, cand, nxt):
    """One position at a time, numpy on each row (how such scripts are usually written)."""
    kl = np.empty(len(ref))
    agree = np.empty(len(ref), dtype=bool)
    for i in range(len(ref)):
        r, c = ref[i].astype(np.float64), cand[i].astype(np.float64)
        lr = r - r.max() - np.log(np.exp(r - r.max()).sum())
        lc = c - c.max() - np.log(np.exp(c - c.max()).sum())
        p = np.exp(lr)
        kl[i] = float((p * (lr - lc)).sum())
        _ = float((np.exp(lc) * (lc - lr)).sum())
        agree[i] = r.argmax() == c.argmax()
        top = np.sort(p)[-2:]
        _ = top[1] - top[0], math.exp(lc[nxt[i]]) - math.exp(lr[nxt[i]])
    return kl, agree


def naive_python_loop(ref, cand, nxt):
    """Pure Python over positions and vocabulary."""
    kl, agree = [], []
    for i in range(len(ref)):
        r, c = ref[i].tolist(), cand[i].tolist()
        mr, mc = max(r), max(c)
        zr = math.log(sum(math.exp(x - mr) for x in r)) + mr
        zc = math.log(sum(math.exp(x - mc) for x in c)) + mc
        k = k2 = 0.0
        best_r = best_c = 0
        p1 = p2 = 0.0
        for j in range(len(r)):
            lr, lc = r[j] - zr, c[j] - zc
            p, q = math.exp(lr), math.exp(lc)
            k += p * (lr - lc)
            k2 += q * (lc - lr)
            if r[j] > r[best_r]:
                best_r = j
            if c[j] > c[best_c]:
                best_c = j
            if p > p1:
                p1, p2 = p, p1
            elif p > p2:
                p2 = p
        _ = math.exp(c[nxt[i]] - zc) - math.exp(r[nxt[i]] - zr)
        kl.append(k)
        agree.append(best_r == best_c)
    return np.array(kl), np.array(agree)


def timed(fn, repeat):
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--positions", type=int, default=1024)
    ap.add_argument("--vocab", type=int, default=2048)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    ref = (rng.normal(size=(args.positions, args.vocab)) * 3).astype(np.float32)
    cand = (ref + rng.normal(size=ref.shape) * 0.05).astype(np.float32)
    nxt = rng.integers(0, args.vocab, args.positions)
    cells = args.positions * args.vocab

    t_vec, st = timed(lambda: position_stats(ref, cand, nxt), args.repeat)
    t_np, (kl_np, ag_np) = timed(lambda: naive_numpy_loop(ref, cand, nxt), args.repeat)
    t_py, (kl_py, ag_py) = timed(lambda: naive_python_loop(ref, cand, nxt), 1)
    assert np.array_equal(st.agree, ag_np) and np.array_equal(st.agree, ag_py)
    diff = max(np.abs(st.kl_ref_cand - kl_np).max(), np.abs(st.kl_ref_cand - kl_py).max())

    print(f"data: {args.positions} positions x {args.vocab} vocab = {cells:,} cells, "
          f"best of {args.repeat} (pure Python: 1 run)")
    print(f"{'method':<28}{'seconds':>10}{'cells/s':>14}{'speed-up':>10}")
    for name, t in (("vectorised (runners)", t_vec), ("per-position numpy loop", t_np),
                    ("per-position pure Python", t_py)):
        print(f"{name:<28}{t:>10.4f}{cells / t:>14.3e}{t / t_vec:>9.1f}x")
    print(f"ratio vectorised / numpy loop: {t_np / t_vec:.1f}x; "
          f"vectorised / pure Python: {t_py / t_vec:.1f}x; max |KL diff| {diff:.2e}")


if __name__ == "__main__":
    main()
