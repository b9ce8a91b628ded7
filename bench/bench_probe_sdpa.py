"""What the probe's sdpa wrapper costs per call, side by side with the unwrapped function.

    .venv/bin/python bench/bench_probe_sdpa.py [--calls N] [--rounds R] [--out DIR]

One Python process started with the probe (the PYTHONPATH `prov exec` gives) holds both
functions: `torch.nn.functional.scaled_dot_product_attention` (the wrapper) and the original
it wraps. For each shape, after a warm-up call (the one that asks torch's chooser), R rounds
each time N calls of one then of the other (the order alternating by round), single thread;
the least disturbed round (lowest CPU time per call) of each is kept. The added cost is
their difference, and its share of the call without the wrapper. Then the same for a
whole forward of the demo model (transformers, `attn_implementation="sdpa"`, built by
`runners.demo`), the module attribute switched between the two functions.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from provenance.exec.probe.host import environment  # noqa: E402

INSIDE = """
import json, sys, time, torch
import torch.nn.functional as F
torch.set_num_threads(1)
calls, rounds = int(sys.argv[1]), int(sys.argv[2])
wrapped = F.scaled_dot_product_attention
original = wrapped._prov_probe_original  # raises if the probe did not wrap it
out = {}
for shape in ((1, 8, 1, 64), (1, 8, 128, 64), (1, 16, 1024, 64)):
    q = torch.randn(*shape)
    n = max(4, calls // (1 + shape[2] // 32))
    best = {"original": float("inf"), "wrapped": float("inf")}
    wrapped(q, q, q, is_causal=shape[2] > 1)  # the first call asks torch's chooser
    for r in range(rounds):
        order = (("original", original), ("wrapped", wrapped))
        for name, fn in order if r % 2 == 0 else order[::-1]:
            t0 = time.process_time_ns()
            for _ in range(n):
                fn(q, q, q, is_causal=shape[2] > 1)
            best[name] = min(best[name], (time.process_time_ns() - t0) / n / 1e3)
    out["x".join(map(str, shape))] = {"calls_per_round": n, **best}
if len(sys.argv) > 3:  # a whole transformers forward of the demo model, sdpa attention
    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained(sys.argv[3], attn_implementation="sdpa")
    for tokens in (1, 32):
        ids = torch.arange(tokens).unsqueeze(0)
        best = {"original": float("inf"), "wrapped": float("inf")}
        with torch.no_grad():
            for r in range(rounds):
                order = (("original", original), ("wrapped", wrapped))
                for name, fn in order if r % 2 == 0 else order[::-1]:
                    F.scaled_dot_product_attention = fn  # transformers looks it up per call
                    t0 = time.process_time_ns()
                    for _ in range(calls // 40):
                        model(ids)
                    per = (time.process_time_ns() - t0) / (calls // 40) / 1e3
                    best[name] = min(best[name], per)
        F.scaled_dot_product_attention = wrapped
        out["demo-model forward, %d token(s)" % tokens] = {"calls_per_round": calls // 40, **best}
print(json.dumps(out))
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=4000)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--out", type=Path, default=REPO / "bench/results/2026-12-01-cpu-2core")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, PROV_RUN_DIR=tmp)
        env.pop("PYTHONPATH", None)
        env.update(environment(tmp, env))
        from runners.demo.build import ensure
        from tests.runners.vllm_venv import CACHE

        model = str(ensure(CACHE / "demo-model", steps=120))
        p = subprocess.run([sys.executable, "-c", INSIDE, str(args.calls), str(args.rounds),
                            model],
                           env=env, capture_output=True, text=True, check=True, timeout=1800)
    shapes = json.loads(p.stdout)
    for row in shapes.values():
        row["added_us"] = round(row["wrapped"] - row["original"], 3)
        row["added_share"] = round(row["added_us"] / row["original"], 4)
    import torch

    result = {"python": sys.version.split()[0], "torch": torch.__version__,
              "unit": "CPU microseconds per call (process_time), best round",
              "calls": args.calls, "rounds": args.rounds,
              "rows (sdpa: batch x heads x seq x head_dim)": shapes}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "bench_probe_sdpa.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
