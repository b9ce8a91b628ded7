"""What storing the run's manifest costs: `prov exec` of a named run against an unnamed one.

    .venv/bin/python bench/bench_exec_named.py [--repeats N] [--json OUT]

A named run (or one with tags, params or run facts) has a `run` section of its own, so
`prov exec` builds its manifest once at the end (store.manifests.run_manifest) and stores
it; an unnamed run's manifest is its snapshot. Both are timed against plain `true`, with a
warm snapshot cache, interleaved, medians of N; the figures are the added wall time and its
ratio to the unnamed run. Absolute times on a shared machine are noisy: read the ratios.
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "PROV_STORE": f"{tmp}/store", "PROV_CACHE_DIR": f"{tmp}/cache"}
        cases = {"true": ["true"],
                 "prov exec -- true": [PROV, "exec", "-q", "--", "true"],
                 "prov exec --name n -- true": [PROV, "exec", "-q", "--name", "n", "--", "true"]}
        for cmd in cases.values():  # warm the snapshot cache
            wall(cmd, env, tmp)
        times: dict[str, list[float]] = {k: [] for k in cases}
        for _ in range(args.repeats):
            for label, cmd in cases.items():
                times[label].append(wall(cmd, env, tmp))
    med = {k: statistics.median(v) for k, v in times.items()}
    unnamed = med["prov exec -- true"] - med["true"]
    named = med["prov exec --name n -- true"] - med["true"]
    out = {"repeats": args.repeats, "median_s": med,
           "added_s": {"unnamed": round(unnamed, 4), "named": round(named, 4)},
           "named_over_unnamed": round(named / unnamed, 3) if unnamed > 0 else None,
           "python": sys.version.split()[0]}
    print(json.dumps(out, indent=2))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
