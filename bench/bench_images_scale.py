"""Image commands against hostile scale, each beside a case 10x smaller (issue #30 item 2).

    .venv/bin/python bench/bench_images_scale.py [--tree DIR] [--timeout S]
        [--out bench/results/<date>-cpu-2core]

Images are built in code by tests/fixtures/scale_images.py:
  dists    `prov pin` of one layer holding N dist-info directories (5,000 and 50,000)
  layers   `prov pin` of a docker-archive listing one layer N times (100 and 1,000: read
           once and applied N times; 10,000 and 100,000: over the 1,000-listing cap, refused)
  env      `prov sbom --image` of a config with N Env entries (1,000 and 10,000; 100,000:
           over the 10,000-entry cap, refused)
Each command runs in a fresh process (wall time, and ru_maxrss of the child). The figure is
the ratio of a case to the one 10x smaller, of wall time and of wall time less the N=1
baseline (start-up, imports, the SBOM's schema validator): ~10 means linear.
--before DIR also runs another prov source tree (PYTHONPATH) on the same images, right after
each case (e.g. a checkout of the commit before issue #30's work), with --before-timeout.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE))

from tests.fixtures.scale_images import (  # noqa: E402
    many_dists_image,
    many_env_image,
    repeated_layer_archive,
)

PROV = [sys.executable, "-c", "import sys; from provenance.cli import main; sys.exit(main())"]
_LAUNCHER = """
import json, resource, subprocess, sys, time
t = time.perf_counter()
try:
    p = subprocess.run(sys.argv[2:], capture_output=True, timeout=float(sys.argv[1]))
    rc, err = p.returncode, p.stderr.decode(errors="replace").strip().splitlines()
except subprocess.TimeoutExpired:
    rc, err = None, ["timed out"]
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"exit": rc, "wall_s": round(time.perf_counter() - t, 2),
                  "cpu_s": round(ru.ru_utime + ru.ru_stime, 2),
                  "peak_rss_mb": ru.ru_maxrss // 1024, "message": (err[-1] if err else "")[:200]}))
"""
CASES = (  # (family, builder, command, sizes): the first size is the fixed-cost baseline
    ("dists", many_dists_image, "pin", (1, 5_000, 50_000)),
    ("layers", repeated_layer_archive, "pin", (1, 100, 1_000, 10_000, 100_000)),
    ("env", many_env_image, "sbom", (1, 1_000, 10_000, 100_000)),
)


def run_once(tree: str, command: str, src: str, out: Path, timeout: float) -> dict:
    argv = (["pin", src, "-o", str(out / "lock.toml")] if command == "pin"
            else ["sbom", "--image", src, "-o", str(out / "sbom.json")])
    env = {**os.environ, "PYTHONPATH": tree}
    proc = subprocess.run([sys.executable, "-c", _LAUNCHER, str(timeout), *PROV, *argv],
                          capture_output=True, text=True, env=env, cwd=out)
    return json.loads(proc.stdout)


def run(trees: list, command: str, src: str, out: Path, repeats: int) -> dict[str, dict]:
    """Each tree `repeats` times, interleaved; per tree the median wall and CPU time (a
    command that timed out is not repeated)."""
    runs: dict[str, list[dict]] = {label: [] for label, _, _ in trees}
    for _ in range(repeats):
        for label, tree, timeout in trees:
            if runs[label] and runs[label][-1]["exit"] is None:
                continue
            runs[label].append(run_once(tree, command, src, out, timeout))
    result = {}
    for label, got in runs.items():
        row = dict(got[-1])
        row["wall_s"] = statistics.median(r["wall_s"] for r in got)
        row["cpu_s"] = statistics.median(r["cpu_s"] for r in got)
        row["runs"] = len(got)
        result[label] = row
    return result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", help="another prov source tree, run beside this one")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--before-timeout", type=float, default=240)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", default="", help="comma-separated families")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    rows = []
    for family, build, command, sizes in CASES:
        if args.only and family not in args.only.split(","):
            continue
        trees = [("after", str(HERE), args.timeout)]
        if args.before:
            trees.append(("before", args.before, args.before_timeout))
        for n in sizes:
            with tempfile.TemporaryDirectory(prefix=f"bench-scale-{family}-") as tmp:
                root = Path(tmp)
                t0 = time.perf_counter()
                src = build(root, n)
                built = round(time.perf_counter() - t0, 1)
                measured = run(trees, command, src, root, args.repeats)
                for label, got in measured.items():
                    row = {"tree": label, "family": family, "command": command, "n": n,
                           "build_s": built, **got}
                    _ratios(row, [r for r in rows if r["family"] == family
                                  and r["tree"] == label])
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    if args.out:
        write(args.out, rows, _described(args.before))


def _described(tree: str | None) -> str | None:
    """A source tree and, when it is a git checkout, its commit."""
    if tree is None:
        return None
    head = subprocess.run(["git", "-C", tree, "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True)
    return f"{tree} at commit {head.stdout.strip()}" if head.returncode == 0 else tree


def _ratios(row: dict, done: list[dict]) -> None:
    """The row's CPU time over the row 10x smaller's: whole, and less the N=1 baseline."""
    base = next((r for r in done if r["n"] == 1 and r["exit"] == 0), None)
    smaller = next((r for r in done if r["n"] * 10 == row["n"]), None)
    if not smaller or row["exit"] != 0 or smaller["exit"] != 0:
        return
    row["ratio_to_n/10"] = round(row["cpu_s"] / smaller["cpu_s"], 1)
    if base and smaller["cpu_s"] > base["cpu_s"] + 0.2:  # else within the noise
        row["marginal_ratio"] = round((row["cpu_s"] - base["cpu_s"])
                                      / (smaller["cpu_s"] - base["cpu_s"]), 1)


def write(out: Path, rows: list[dict], before: str | None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    doc = {"bench": "bench/bench_images_scale.py", "before": before, "cpu_count": os.cpu_count(),
           "python": sys.version.split()[0], "rows": rows}
    (out / "images-scale.json").write_text(json.dumps(doc, indent=2) + "\n")
    lines = ["# Image commands at hostile scale (issue #30)", "",
             "Fresh process per run, medians of the runs (`before` and `after` interleaved); "
             "wall time, CPU time (user + system, less sensitive to the shared machine's "
             "load) and peak RSS (ru_maxrss) of the prov child. `ratio` is the row's CPU "
             "time over the row 10x smaller; `marginal` the same less the N=1 row (start-up, "
             "imports, the SBOM validator; left out where the smaller row is within 0.2 s of "
             "it): ~10 means linear. `before`: the tree before issue #30's work. Produced by "
             "`bench/bench_images_scale.py`.", "",
             "| tree | case | command | N | exit | wall s | CPU s | ratio to N/10 | "
             "marginal ratio | peak RSS MB | outcome |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        outcome = "ok" if r["exit"] == 0 else re.sub(r"^prov: error: \S+: ", "", r["message"])
        outcome = outcome.replace("|", "/")[-100:]
        if r["exit"] is None:
            outcome = "still running at the timeout"
        lines.append(f"| {r['tree']} | {r['family']} | {r['command']} | {r['n']:,} | "
                     f"{r['exit']} | {r['wall_s']} | {r['cpu_s']} | {r.get('ratio_to_n/10', '')} | "
                     f"{r.get('marginal_ratio', '')} | {r['peak_rss_mb']} | {outcome} |")
    (out / "images-scale.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
