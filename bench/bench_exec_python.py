"""What `prov exec` adds to a Python program, two source trees side by side in one run.

    .venv/bin/python bench/bench_exec_python.py [--baseline REF] [--current REF] [--repeats N]
        [--out DIR]

Commands, each plain and under `prov exec -q` of each tree (`git archive` of the baseline
and of the current REF, unpacked alike; launcher as in bench_startup.py; each tree its own
store and cache directory, warmed by an untimed first round): `true` (no probe: prov's
floor), `python -c pass` (the probe starts, prov reads which files the process imported and
which libraries it mapped, and who installed each) and `python -c "import torch"`. Runs
interleave; the median wall time and the median CPU time of the whole process tree (prov,
the program, its children) are reported, and prov's part: the prov run less the plain one.
Absolute times on a shared machine are noisy: read the ratios.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from bench_startup import (  # noqa: E402
    commit,
    in_scratch,
    launcher,
    timed,
    unpack,
    write_results,
)

COMMANDS = {"true": ["true"], "python -c pass": [sys.executable, "-c", "pass"],
            "import torch": [sys.executable, "-c", "import torch"]}


def measure(args: argparse.Namespace, scratch: Path) -> dict:
    # both trees unpacked the same way: a checkout and an unpacked tree import at different
    # speeds (seen: `prov exec -- true`, whose code did not change, 0.81x)
    trees = {"baseline": unpack(args.baseline, scratch / "baseline"),
             "current": unpack(args.current, scratch / "current")}
    cells = {}
    for tree, root in trees.items():
        env = dict(os.environ, PROV_STORE=str(scratch / tree / "store"),
                   PROV_CACHE_DIR=str(scratch / tree / "cache"))
        env.pop("PYTHONPATH", None)
        cells[tree] = (str(launcher(root, scratch / tree / "bin")), env)
    plain_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result: dict = {"baseline": commit(args.baseline), "current": commit(args.current),
                    "commands": {}}
    for name, argv in COMMANDS.items():
        samples: dict[str, list[tuple[float, float]]] = {"plain": [], **{t: [] for t in trees}}
        for rnd in range(args.repeats + 1):  # round 0 warms each tree's caches, untimed
            runs = {"plain": (argv, plain_env)}
            runs.update({t: ([prov, "exec", "-q", "--", *argv], env)
                         for t, (prov, env) in cells.items()})
            for key, (cmd, env) in runs.items():
                wall_cpu = timed(cmd, env)
                if rnd:
                    samples[key].append(wall_cpu)
        result["commands"][name] = {
            k: {"wall_s": statistics.median(w for w, _ in v),
                "cpu_s": statistics.median(c for _, c in v), "runs": len(v)}
            for k, v in samples.items()}
    return result


def markdown(result: dict) -> str:
    lines = [f"Baseline `{result['baseline']}`, current `{result['current']}`.", "",
             "| command | plain CPU s | baseline CPU s | current CPU s | prov's part, baseline "
             "s | prov's part, current s | current / baseline (prov's part) | baseline wall s "
             "| current wall s |", "|---|---|---|---|---|---|---|---|---|"]
    for name, c in result["commands"].items():
        plain, b, cur = c["plain"], c["baseline"], c["current"]
        pb, pc = b["cpu_s"] - plain["cpu_s"], cur["cpu_s"] - plain["cpu_s"]
        lines.append(f"| `{name}` | {plain['cpu_s']:.3f} | {b['cpu_s']:.3f} | "
                     f"{cur['cpu_s']:.3f} | {pb:.3f} | {pc:.3f} | {pc / pb:.2f} | "
                     f"{b['wall_s']:.3f} | {cur['wall_s']:.3f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", default="HEAD~1")
    ap.add_argument("--current", default="HEAD")
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    result = in_scratch("prov-bench-python-", lambda scratch: measure(args, scratch))
    write_results(args.out, "exec-python", "What `prov exec` adds to a Python program", result,
                  markdown(result))


if __name__ == "__main__":
    main()
