"""What storing the run's manifest costs: `prov exec` of a named run against an unnamed one.

    .venv/bin/python bench/bench_exec_named.py [--repeats N] [--json OUT] [--tree LABEL=DIR ...]

A named run (or one with tags, params or run facts) has a `run` section of its own, so
`prov exec` builds its manifest once at the end (store.manifests.run_manifest) and stores
it; an unnamed run's manifest is its snapshot. Both are timed against plain `true`, with a
warm snapshot cache, interleaved, medians of N; the figures are the added wall time and its
ratio to the unnamed run. With `--tree LABEL=DIR` (repeatable) each case runs with
PYTHONPATH=DIR, interleaved with the others: two checkouts of prov side by side. Absolute times on a
shared machine are noisy: read the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROV = str(Path(sys.executable).parent / "prov")


def wall(cmd: list[str], env: dict[str, str], cwd: str) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def cases(trees: list[str], tmp: str) -> dict[str, tuple[list[str], dict[str, str]]]:
    base = {**os.environ, "PROV_STORE": f"{tmp}/store", "PROV_CACHE_DIR": f"{tmp}/cache"}
    out = {"true": (["true"], base)}
    for tree in trees or [""]:
        label, _, path = tree.partition("=")
        env = {**base, "PYTHONPATH": path} if tree else base
        tag = f" [{label}]" if tree else ""
        out[f"prov exec -- true{tag}"] = ([PROV, "exec", "-q", "--", "true"], env)
        out[f"prov exec --name n -- true{tag}"] = (
            [PROV, "exec", "-q", "--name", "n", "--", "true"], env)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--tree", action="append", default=[])
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        todo = cases(args.tree, tmp)
        for cmd, env in todo.values():  # warm the snapshot cache
            wall(cmd, env, tmp)
        times: dict[str, list[float]] = {k: [] for k in todo}
        for _ in range(args.repeats):
            for label, (cmd, env) in todo.items():
                times[label].append(wall(cmd, env, tmp))
    med = {k: round(statistics.median(v), 4) for k, v in times.items()}
    added = {k: round(v - med["true"], 4) for k, v in med.items() if k != "true"}
    ratios = {}
    for tree in args.tree or [""]:
        label = tree.partition("=")[0]
        tag = f" [{label}]" if tree else ""
        unnamed, named = added[f"prov exec -- true{tag}"], added[f"prov exec --name n -- true{tag}"]
        ratios[label or "this"] = round(named / unnamed, 3) if unnamed > 0 else None
    out = {"repeats": args.repeats, "median_s": med, "added_s": added,
           "named_over_unnamed": ratios, "python": sys.version.split()[0]}
    print(json.dumps(out, indent=2))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
