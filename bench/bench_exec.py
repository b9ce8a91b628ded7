"""What `prov exec` costs, measured side by side in one run.

    .venv/bin/python bench/bench_exec.py [--repeats N] [--cpu-seconds S]

1. Wall time of `true` against `prov exec -q -- true` with a warm snapshot cache (median of
   N interleaved runs), outside a git repository and inside this one (git state read), with
   `prov --help` as the floor any prov command pays (interpreter + CLI start).
2. A CPU-bound command of about S seconds (a fixed amount of Python arithmetic) run plain
   and under prov: prov's own CPU time (getrusage of the prov process, from the run
   record), the part of it spent while the command ran (sampling loaded libraries, pumping
   logs), and total CPU of the whole process tree (wait4) for both.
Targets: < 250 ms added wall time warm; < 1 % added CPU during a long run.
Absolute times on a shared machine are noisy; run it twice if a figure looks off.
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

BIN = Path(sys.executable).parent
PROV = str(BIN / "prov")
REPO = Path(__file__).resolve().parent.parent


def wall(cmd: list[str], env: dict[str, str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def tree_cpu(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(wall seconds, user+sys CPU seconds of the command and all it waited for)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{cmd} failed")
    return elapsed, usage.ru_utime + usage.ru_stime


def last_record(env: dict[str, str]) -> dict:
    runs = json.loads(subprocess.check_output([PROV, "runs", "--json", "-n", "1"], env=env))
    return json.loads(subprocess.check_output([PROV, "show", runs[0]["run_id"], "--json"], env=env))


def burn_command(loops: int) -> list[str]:
    return [sys.executable, "-c", f"x = 0\nfor i in range({loops}):\n    x += i * i\n"]


def calibrate(seconds: float, env: dict[str, str], cwd: Path) -> int:
    probe = 2_000_000
    _, cpu = tree_cpu(burn_command(probe), env, cwd)
    return max(probe, int(probe * seconds / max(cpu, 1e-3)))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--cpu-seconds", type=float, default=10.0)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="prov-bench-exec-") as tmp:
        tmpdir = Path(tmp)
        env = dict(os.environ)
        env.update({"PROV_STORE": str(tmpdir / "store"), "PROV_CACHE_DIR": str(tmpdir / "cache")})
        outside = tmpdir / "work"
        outside.mkdir()
        exec_true = [PROV, "exec", "-q", "--", "true"]
        cold = wall(exec_true, env, outside)  # first run: cold snapshot cache
        wall(exec_true, env, REPO)  # warm git/page caches too

        times: dict[str, list[float]] = {k: [] for k in ("true", "import", "help", "out", "git")}
        cpu: dict[str, list[float]] = {k: [] for k in ("out", "git")}
        import_cli = [sys.executable, "-c", "import provenance.cli"]
        for _ in range(args.repeats):
            times["true"].append(wall(["true"], env, outside))
            times["import"].append(wall(import_cli, env, outside))
            times["help"].append(wall([PROV, "--help"], env, outside))
            for key, cwd in (("out", outside), ("git", REPO)):
                elapsed, used = tree_cpu(exec_true, env, cwd)
                times[key].append(elapsed)
                cpu[key].append(used)
        med = {k: statistics.median(v) * 1000 for k, v in times.items()}
        hits = last_record(env)["snapshot"]["cache"]

        print(f"prov exec overhead: median of {args.repeats} interleaved runs, ms")
        print(f"  {'true':<44}{med['true']:9.1f}")
        floor = "python -c 'import provenance.cli' (floor)"
        print(f"  {floor:<44}{med['import']:9.1f}")
        print(f"  {'prov --help (interpreter + CLI + rich help)':<44}{med['help']:9.1f}")
        print(f"  {'prov exec -- true, cold snapshot cache':<44}{cold * 1000:9.1f}")
        for key, label in (("out", "outside git"), ("git", "inside a git repository")):
            added = med[key] - med["true"]
            print(
                f"  {'prov exec -- true, warm, ' + label:<44}{med[key]:9.1f}"
                f"   added {added:6.1f} ms  (target < 250: {'ok' if added < 250 else 'MISSED'});"
                f" beyond the import floor {med[key] - med['import']:6.1f} ms;"
                f" CPU {statistics.median(cpu[key]) * 1000:6.1f} ms"
            )
        print(f"  snapshot cache on the last run: {hits}")

        loops = calibrate(args.cpu_seconds, env, outside)
        burn = burn_command(loops)
        plain_wall, plain_cpu = tree_cpu(burn, env, outside)
        prov_wall, prov_tree_cpu = tree_cpu([PROV, "exec", "-q", "--", *burn], env, outside)
        rec = last_record(env)
        res = rec["resources"]
        child = res["child_cpu_s"]
        own = res["prov_cpu_s"]
        during = res["prov_cpu_while_running_s"]
        print(f"\nCPU-bound command ({loops:,} loop iterations), seconds")
        print(f"  {'plain: wall / CPU':<44}{plain_wall:9.3f} / {plain_cpu:.3f}")
        print(
            f"  {'under prov: wall / CPU of the whole tree':<44}{prov_wall:9.3f}"
            f" / {prov_tree_cpu:.3f}"
        )
        print(f"  {'the command itself under prov (wait4)':<44}{child:9.3f}")
        print(
            f"  {'prov process, whole run (getrusage)':<44}{own:9.3f}   {100 * own / child:.2f} %"
        )
        print(
            f"  {'prov while the command ran':<44}{during:9.3f}   {100 * during / child:.3f} %"
            f"  (target < 1 %: {'ok' if during / child < 0.01 else 'MISSED'})"
        )
        print(f"  {'library samples taken':<44}{rec['library_samples']:9d}")
        print(
            f"  {'tree CPU difference (noisy)':<44}{prov_tree_cpu - plain_cpu:9.3f}   "
            f"{100 * (prov_tree_cpu - plain_cpu) / plain_cpu:.2f} %"
        )


if __name__ == "__main__":
    main()
