"""What the in-process probe costs the program it watches, side by side with it off.

    .venv/bin/python bench/bench_probe.py [--repeats N] [--seconds S] [--rounds R] [--out DIR]

1. Start-up: `python -c pass` and `python -c "import torch"` with the probe (the PYTHONPATH
   `prov exec` gives) and without it (PROV_INPROCESS=0: nothing added), N interleaved runs,
   medians of wall time and of the process tree's CPU time (wait4); and the probe's own
   import time, from `-X importtime` (the `sitecustomize` line: our start).
2. A torch workload of about S seconds of CPU (a fixed number of float64 matmuls,
   calibrated on CPU time, torch's import included), with and
   without the probe, interleaved, R rounds; the least disturbed (lowest CPU) of each is
   kept, and the share the probe adds is their difference over the run without it.
3. prov's side: `host.collect` on the files that workload left (RECORD checks, ELF reads,
   owners), warm digest cache. This runs in prov after the command, not in the program.
Targets (issue #17): < 50 ms at start, < 1 % of run time.
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

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from provenance.exec.probe.host import collect, environment  # noqa: E402

PYTHON = sys.executable
WORKLOAD = """
import sys, torch
torch.set_num_threads(1)  # one thread: CPU time is the work, not the pool's spinning
a = torch.randn(256, 256, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
for _ in range(int(sys.argv[1])):
    a = (a @ a) / 256.0
print(float(a.sum()))
"""


def envs(run_dir: Path) -> dict[str, dict[str, str]]:
    base = dict(os.environ, PROV_RUN_DIR=str(run_dir))
    base.pop("PYTHONPATH", None)
    on = {**base, **environment(run_dir, base)}
    return {"on": on, "off": {**base, "PROV_INPROCESS": "0"}}


def tree(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{cmd} failed: {proc.stderr.read().decode()[-500:]}")
    proc.stderr.close()
    return elapsed, usage.ru_utime + usage.ru_stime


def probe_import_us(env: dict[str, str]) -> int:
    p = subprocess.run([PYTHON, "-X", "importtime", "-c", "pass"], env=env,
                       capture_output=True, text=True, check=True)
    line = next(x for x in p.stderr.splitlines() if x.rstrip().endswith("| sitecustomize")
                or x.rstrip().endswith("|   sitecustomize"))
    return int(re.split(r"\s*\|\s*", line.split(":", 1)[1].strip())[1])


def startup(e: dict, repeats: int) -> dict:
    out = {}
    for label, code in (("python -c pass", "pass"), ("python -c 'import torch'", "import torch")):
        samples: dict[str, list] = {"on": [], "off": []}
        for _ in range(repeats):
            for side in ("on", "off"):
                samples[side].append(tree([PYTHON, "-c", code], e[side]))
        med = {s: {"wall_ms": round(1000 * statistics.median(w for w, _ in v), 2),
                   "cpu_ms": round(1000 * statistics.median(c for _, c in v), 2)}
               for s, v in samples.items()}
        med["added_wall_ms"] = round(med["on"]["wall_ms"] - med["off"]["wall_ms"], 2)
        med["added_cpu_ms"] = round(med["on"]["cpu_ms"] - med["off"]["cpu_ms"], 2)
        out[label] = med
    imports = [probe_import_us(e["on"]) for _ in range(repeats)]
    out["probe_import_ms_median"] = round(statistics.median(imports) / 1000, 3)
    return out


def calibrate(e: dict, seconds: float) -> int:
    """Iterations for about `seconds` of CPU (wall time on a shared machine is not ours):
    the lower of two readings at 0 and at 400 iterations, a straight line through them."""
    def cpu(n: int) -> float:
        return min(tree([PYTHON, "-c", WORKLOAD, str(n)], e["off"])[1] for _ in range(2))

    base, at = cpu(0), cpu(400)
    return max(1, int(400 * (seconds - base) / max(at - base, 1e-3)))


def long_run(e: dict, seconds: float, rounds: int, script: Path) -> dict:
    n = calibrate(e, seconds)
    kept: dict[str, tuple[float, float]] = {}
    for _ in range(rounds):
        for side in ("on", "off"):
            w, c = tree([PYTHON, str(script), str(n)], e[side])
            if side not in kept or c < kept[side][1]:
                kept[side] = (w, c)
    on, off = kept["on"], kept["off"]
    return {"iterations": n, "rounds": rounds,
            "off": {"wall_s": round(off[0], 3), "cpu_s": round(off[1], 3)},
            "on": {"wall_s": round(on[0], 3), "cpu_s": round(on[1], 3)},
            "added_cpu_pct": round(100 * (on[1] - off[1]) / off[1], 3),
            "added_wall_pct": round(100 * (on[0] - off[0]) / off[0], 3)}


def collect_cost(run_dir: Path) -> dict:
    start = time.perf_counter()
    facts = collect(run_dir)
    return {"collect_s": round(time.perf_counter() - start, 3),
            "libraries": (facts.get("probe", {}).get("libraries") or {}).get("mapped"),
            "distributions_checked": len((facts.get("code") or {}).get("modules") or {})}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", type=Path, default=REPO / "bench/results/2026-12-01-cpu-2core")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp)
        e = envs(run_dir)
        script = run_dir / "work.py"
        script.write_text(WORKLOAD)
        result = {"python": sys.version.split()[0], "cpus": os.cpu_count(),
                  "startup": startup(e, args.repeats)}
        for f in (run_dir / "probe").glob("*.json"):
            f.unlink()
        result["long_run"] = long_run(e, args.seconds, args.rounds, script)
        collect(run_dir)  # warm the digest cache, as a second run of one environment is
        environment(run_dir, e["on"])  # collect consumed the probe directory
        tree([PYTHON, str(script), "1"], e["on"])
        result["prov_side"] = collect_cost(run_dir)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "bench_probe.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
