"""How long `prov demo` takes: the figure its help and the docs state, measured.

    .venv/bin/python bench/bench_demo.py [--out bench/results/DATE-MACHINE/demo]

Runs `prov demo --json` twice in one fresh work directory: cold (the tiny model is built
and trained first) and warm (the model is reused), and prints for each the wall time, the
CPU time of the whole process tree (wait4), the model build time the demo reports, the
number of engine runs it added to its store and the load average before and after. The machine's
other jobs count in the wall time: read the load average beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROV = str(Path(sys.executable).with_name("prov"))


def _runs(store: Path, env: dict[str, str]) -> int:
    """How many runs the demo's store holds (it keeps its own, beside its results)."""
    if not store.is_dir():
        return 0
    return len(json.loads(subprocess.check_output([PROV, "runs", "--json", "-n", "0"],
                                                  env={**env, "PROV_STORE": str(store)})))


def one_demo(workdir: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PROV_STORE"}
    before = _runs(workdir / "store", env)
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    proc = subprocess.Popen([PROV, "demo", "--json", "--workdir", str(workdir)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit("prov demo failed")
    figures = json.loads(out)
    return {"wall_s": round(wall, 1), "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
            "build_s": figures["build_seconds"], "demo_reported_s": figures["seconds"],
            "engine_runs": _runs(Path(figures["store"]), env) - before,
            "load_before": round(load, 2),
            "load_after": round(os.getloadavg()[0], 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, help="write OUT.json and OUT.md")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="prov-bench-demo-") as tmp:
        cold = one_demo(Path(tmp) / "demo")
        warm = one_demo(Path(tmp) / "demo")
    doc = {"bench": "bench_demo", "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
           "python": platform.python_version(), "cold": cold, "warm": warm,
           "command": " ".join([".venv/bin/python", "bench/bench_demo.py", *sys.argv[1:]])}
    print(json.dumps(doc, indent=1))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_suffix(".json").write_text(json.dumps(doc, indent=1) + "\n")
        args.out.with_suffix(".md").write_text(markdown(doc))


def markdown(doc: dict) -> str:
    rows = [f"| {name} | {r['wall_s']} s | {r['cpu_s']} s | {r['build_s']} s | "
            f"{r['engine_runs']} | {r['load_before']} → {r['load_after']} |"
            for name, r in (("cold (model built)", doc["cold"]),
                            ("warm (model reused)", doc["warm"]))]
    return "\n".join([
        "# `prov demo`: wall and CPU time", "",
        f"`{doc['command']}` on {doc['machine']} (Python {doc['python']}), one fresh work "
        "directory, cold then warm. The machine is shared (other engineers' jobs and test "
        "runs): its load average is beside each figure, and the wall time is mostly their "
        "turns; the CPU time of the demo's own process tree is the steadier figure.", "",
        "| run | wall | CPU (process tree) | model build | engine runs | load average |",
        "|---|---:|---:|---:|---:|---|", *rows, "",
        "Each engine run is a fresh process under the `prov exec` supervisor (torch and "
        "transformers imported anew), so the demo takes minutes on CPU, not \"about a "
        "minute\" as its help once said; the issue that asked for this figure saw 514 s on "
        "the same kind of machine under heavier load. `prov demo --help` says \"several "
        "minutes\"; the demo's first line names the engine runs that follow.", ""])

if __name__ == "__main__":
    main()
