"""Two trees of `containers/` on one image, interleaved: the floor, and `prov pin`'s scan
(every file hashed) of each tree; median wall and CPU seconds, peak RSS.

    python bench/bench_zstd_overlap.py SOURCE ROUNDS NEW_TREE OLD_TREE

Written to measure zstd decompression moved to its own thread (a bounded queue of 1 MiB
chunks ahead of the tar parser) against the same code with decompression inline: see
bench/results/2026-12-03-cpu-2core/README.md (no gain; the change was not kept). Prints
one JSON object.
"""

from __future__ import annotations

import json
import resource
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_containers import SCAN, _timed, layer_streams, pipelines, run_shell  # noqa: E402


def _scan(source: str, tree: str) -> tuple[float, float, int]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([sys.executable, "-c", SCAN, source, "1"], check=True,
                         capture_output=True, text=True, cwd=tree).stdout.split()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return float(out[0]), cpu, int(out[1]) // 1024


def main() -> None:
    source, rounds, new, old = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    floor = pipelines(layer_streams(source), "floor")
    run_shell(floor)  # warm the page cache
    runs: dict[str, list] = {"floor": [], "new": [], "old": []}
    for _ in range(rounds):
        runs["floor"].append((*_timed(lambda: run_shell(floor)), 0))
        runs["new"].append(_scan(source, new))
        runs["old"].append(_scan(source, old))
    med = {k: {"wall_s": statistics.median(v[0] for v in vs),
               "cpu_s": statistics.median(v[1] for v in vs),
               "peak_rss_mb": max(v[2] for v in vs)} for k, vs in runs.items()}
    out = {"source": source, "rounds": rounds, "median": med,
           "new/floor": med["new"]["wall_s"] / med["floor"]["wall_s"],
           "old/floor": med["old"]["wall_s"] / med["floor"]["wall_s"], "runs": runs}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
