"""Analysis throughput: vectorised per-position statistics vs naive per-position loops; and
(--cost) what the figures of issue #29 item 2 cost over the analysis before them.

Same data for every method (synthetic logits of two engines that nearly agree); each method
computes top-1 agreement, KL both ways, the reference margin and Delta-p of the next token.
Prints seconds, positions x vocab per second, and the ratio to each naive loop, plus the
largest difference between methods (they must agree).

    .venv/bin/python bench/bench_analysis.py [--positions 1024] [--vocab 2048] [--repeat 3]
    .venv/bin/python bench/bench_analysis.py --cost [--positions 4096] [--vocab 151936]
        [--repeat 2] [--json-out FILE]

--cost times, side by side in one process on the same arrays: the per-position pass and the
summary as they were before the new figures (runners/analysis/kl.py, agreement.py and
diverge.py at BEFORE, loaded from git) and as they are now (top-10 lists, the reference's
top-1 probability, the next token's log-probabilities; llama.cpp's and exllamav3's summary
figures), then the noise floor for a bit-identical repeat (a byte comparison) and for a
repeat whose every row differs (a second analysis: the worst case).
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


BEFORE = "670165d"  # main before issue #29 item 2


def _module_at(rev: str, path: str, name: str):
    """A module as it was at `rev` (git show), imported under `name`."""
    import subprocess
    import sys
    import types
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    src = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=root, check=True,
                         capture_output=True, text=True).stdout
    mod = types.ModuleType(name)
    mod.__file__ = f"{rev}:{path}"
    sys.modules[name] = mod
    exec(compile(src, mod.__file__, "exec"), mod.__dict__)
    return mod


def synthetic(positions: int, vocab: int, seed: int = 0):
    """ref, cand (float32, built in row chunks: no float64 copy of the whole matrix), ids."""
    rng = np.random.default_rng(seed)
    ref = np.empty((positions, vocab), np.float32)
    cand = np.empty_like(ref)
    for s in range(0, positions, 64):
        e = min(s + 64, positions)
        ref[s:e] = rng.normal(size=(e - s, vocab)) * 3
        cand[s:e] = ref[s:e] + rng.normal(size=(e - s, vocab)) * 0.05
    return ref, cand, rng.integers(0, vocab, positions + 1)


def cost(args) -> dict:
    from runners.analysis.noise import noise_floor
    from runners.analysis.summary import POSITION_ARRAYS, summarise

    old_kl = _module_at(BEFORE, "runners/analysis/kl.py", "old_kl")
    old_pct = _module_at(BEFORE, "runners/analysis/agreement.py", "old_agreement")
    old_div = _module_at(BEFORE, "runners/diverge.py", "old_diverge")
    old_div.percentiles = old_pct.percentiles  # its percentile list, not today's longer one
    ref, cand, ids = synthetic(args.positions, args.vocab)
    nxt = ids[1:]
    floor = {"storage_dtype": "float32", "ref": {"max": 0.0}, "cand": {"max": 0.0}}
    t = {}
    t["old_positions"], old = timed(lambda: old_kl.position_stats(ref, cand, nxt), args.repeat)
    t["new_positions"], new = timed(lambda: position_stats(ref, cand, nxt), args.repeat)
    assert np.array_equal(old.kl_ref_cand, new.kl_ref_cand)
    assert np.array_equal(old.margin, new.margin) and np.array_equal(old.agree, new.agree)
    old_per = {k: getattr(old, k) for k in ("ref_top1", "cand_top1", "margin", "kl_ref_cand",
                                            "kl_cand_ref", "delta_p", "truncated")}
    new_per = {k: getattr(new, k) for k in POSITION_ARRAYS}
    t["old_summary"], _ = timed(lambda: old_div.summarise(old_per, ids, floor), args.repeat)
    t["new_summary"], _ = timed(lambda: summarise(new_per, ids, floor), args.repeat)
    t["noise_floor_identical"], same = timed(lambda: noise_floor(ref, ref, nxt), args.repeat)
    t["noise_floor_all_differ"], diff = timed(lambda: noise_floor(ref, cand, nxt), args.repeat)
    assert same["bit_identical"] and diff["bit_identical_positions"] == 0
    old_total = t["old_positions"] + t["old_summary"]
    new_total = t["new_positions"] + t["new_summary"]
    return {"positions": args.positions, "vocab": args.vocab, "repeat": args.repeat,
            "before": BEFORE, "seconds": {k: round(v, 4) for k, v in t.items()},
            "ratios": {
                "per_position_new_over_old": round(t["new_positions"] / t["old_positions"], 3),
                "summary_new_over_old": round(t["new_summary"] / t["old_summary"], 3),
                "analysis_new_over_old": round(new_total / old_total, 3),
                "with_identical_noise_floor_over_old": round(
                    (new_total + t["noise_floor_identical"]) / old_total, 3),
                "with_all_differing_noise_floor_over_old": round(
                    (new_total + t["noise_floor_all_differ"]) / old_total, 3)}}


def print_cost(res: dict) -> None:
    print(f"data: {res['positions']} positions x {res['vocab']} vocab, best of "
          f"{res['repeat']}; before = {res['before']}")
    for k, v in res["seconds"].items():
        print(f"  {k:<26}{v:>10.3f} s")
    for k, v in res["ratios"].items():
        print(f"  {k:<42}{v:>7.3f}x")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--positions", type=int, default=None)
    ap.add_argument("--vocab", type=int, default=None)
    ap.add_argument("--repeat", type=int, default=None)
    ap.add_argument("--cost", action="store_true", help="the new figures' cost (see above)")
    ap.add_argument("--json-out", default=None, help="--cost: write the figures here too")
    args = ap.parse_args()
    if args.cost:
        args.positions = args.positions or 4096
        args.vocab = args.vocab or 151936
        args.repeat = args.repeat or 2
        res = cost(args)
        print_cost(res)
        if args.json_out:
            import json

            with open(args.json_out, "w") as f:
                json.dump(res, f, indent=1)
        return
    args.positions = args.positions or 1024
    args.vocab = args.vocab or 2048
    args.repeat = args.repeat or 3
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
