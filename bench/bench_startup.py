"""prov's start-up, two source trees side by side in one run: `prov --help`, a warm
`prov snapshot` (of this interpreter and of a `--python` venv) and `import provenance`;
and what the structures kept for speed save, each measured in the tree that has it.

    .venv/bin/python bench/bench_startup.py [--baseline REF] [--repeats N] [--out DIR]

The baseline is `git archive REF` of this repository unpacked into a scratch directory; both
trees run on this venv's interpreter through a launcher named `prov` (as the console script
is), each with its own store and cache directory, warmed before timing. Runs are interleaved
(baseline, current, baseline, ...), so both see the same load; the median wall time and the
median CPU time (user + sys of the process and its children) are reported, and their ratios.
On a shared machine absolute times are noisy: the ratios, measured in one run, are the result.

The parts, in-process medians: the host dpkg status parse against its kept answer (the one
cache, current tree); `prov snapshot`'s command module alone against every command module
(what `prov NAME` importing only NAME's module saves, current tree); and the snapshot memo
the current tree removed (digest and JSON text of a warm snapshot reused against computed,
baseline tree, when it has `provenance/snapshot_memo.py`).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TREES = ("provenance", "containers", "lockfiles", "runners")
LAUNCHER = """#!{python}
import sys
sys.path.insert(0, {root!r})
from provenance.cli import main
sys.exit(main())
"""


def unpack(ref: str, into: Path) -> Path:
    """`git archive REF` of the project's packages, unpacked under `into`."""
    data = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", ref, *TREES],
                          capture_output=True, check=True).stdout
    into.mkdir(parents=True, exist_ok=True)
    tar = into / "tree.tar"
    tar.write_bytes(data)
    with tarfile.open(tar) as fh:
        fh.extractall(into / "tree", filter="data")
    return into / "tree"


def launcher(root: Path, where: Path) -> Path:
    """A `prov` script that runs the CLI of the tree at `root`."""
    where.mkdir(parents=True, exist_ok=True)
    script = where / "prov"
    script.write_text(LAUNCHER.format(python=sys.executable, root=str(root)))
    script.chmod(0o755)
    return script


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the children) of one run, which must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                   check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def make_venv(scratch: Path) -> Path:
    """A small venv (no pip) for `prov snapshot --python`."""
    venv = scratch / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    return venv / "bin" / "python"


def cases(prov: Path, root: Path, venv_python: Path) -> dict[str, list[str]]:
    return {
        "prov --help": [str(prov), "--help"],
        "prov snapshot (warm)": [str(prov), "snapshot"],
        "prov snapshot --python VENV (warm)": [str(prov), "snapshot", "--python",
                                               str(venv_python)],
        "import provenance": [sys.executable, "-c",
                              f"import sys; sys.path.insert(0, {str(root)!r}); "
                              "import provenance"],
    }


def in_scratch(prefix: str, measure: Callable[[Path], dict]) -> dict:
    """`measure(scratch)` in a scratch directory, removed afterwards."""
    scratch = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        return measure(scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def write_results(out: Path | None, stem: str, title: str, result: dict, text: str) -> None:
    """Print the markdown; with `out`, write STEM.json and STEM.md (headed `title`) there."""
    print(text)
    if out:
        out.mkdir(parents=True, exist_ok=True)
        (out / f"{stem}.json").write_text(json.dumps(result, indent=2) + "\n")
        (out / f"{stem}.md").write_text(f"# {title}\n\n" + text)


def run(args: argparse.Namespace) -> dict:
    return in_scratch("prov-bench-startup-", lambda scratch: _run(args, scratch))


def _run(args: argparse.Namespace, scratch: Path) -> dict:
    trees = {"baseline": unpack(args.baseline, scratch / "baseline"), "current": ROOT}
    venv_python = make_venv(scratch)
    time.sleep(2.5)  # the venv's files leave the caches' racy window before the warm-up
    setups = {}
    for label, root in trees.items():
        env = dict(os.environ, PROV_STORE=str(scratch / label / "store"),
                   PROV_CACHE_DIR=str(scratch / label / "cache"))
        env.pop("PYTHONPATH", None)
        setups[label] = (cases(launcher(root, scratch / label / "bin"), root, venv_python), env)
    for commands, env in setups.values():  # warm: the caches filled, pages in memory
        for cmd in commands.values():
            for _ in range(2):
                timed(cmd, env)
    samples: dict[str, dict[str, list[tuple[float, float]]]] = {}
    rows = {"parts": parts(trees, setups["current"][1], args.repeats)}
    for _ in range(args.repeats):
        for name in setups["current"][0]:
            for label, (commands, env) in setups.items():
                samples.setdefault(name, {}).setdefault(label, []).append(
                    timed(commands[name], env))
    rows["cases"] = {}
    for name, by_label in samples.items():
        row = {}
        for label, got in by_label.items():
            row[label] = {"wall_ms": round(statistics.median(w for w, _ in got) * 1e3, 1),
                          "cpu_ms": round(statistics.median(c for _, c in got) * 1e3, 1)}
        for what in ("wall_ms", "cpu_ms"):
            row[f"{what}_ratio"] = round(row["current"][what] / row["baseline"][what], 3)
        rows["cases"][name] = row
    return rows


PART_TIMER = """
import json, statistics, sys, time
sys.path.insert(0, {root!r})
def median_ms(f, n={n}):
    f()
    out = []
    for _ in range(n):
        t = time.perf_counter(); f(); out.append(time.perf_counter() - t)
    return round(statistics.median(out) * 1e3, 2)
"""
PART_CACHE = PART_TIMER + """
from pathlib import Path
from provenance.collectors import os_info
root = Path("/")
print(json.dumps({{"dpkg status parse": median_ms(lambda: os_info.dpkg_packages(root, [])),
                   "dpkg kept answer": median_ms(lambda: os_info.host_dpkg_packages([], root))}}))
"""
PART_MEMO = PART_TIMER + """
from provenance.model import Manifest
from provenance.snapshot import take_snapshot
from provenance.snapshot_memo import digest_and_text
facts = take_snapshot()[0].facts
def computed():
    m = Manifest(facts); m.digest(); m.to_json()
print(json.dumps({{"digest and JSON text, computed": median_ms(computed),
                   "digest and JSON text, memo": median_ms(
                       lambda: digest_and_text(Manifest(facts), None))}}))
"""
LOAD = ("import sys; sys.path.insert(0, {root!r}); import provenance.cli as c; "
        "c.load_commands({arg})")


def parts(trees: dict[str, Path], env: dict[str, str], repeats: int) -> dict[str, float]:
    """Milliseconds of the work each speed structure saves (module docstring)."""

    def run(code: str, root: Path) -> dict[str, float]:
        return json.loads(subprocess.run(
            [sys.executable, "-c", code.format(root=str(root), n=repeats * 5)], env=env,
            capture_output=True, text=True, check=True).stdout)

    out = run(PART_CACHE, trees["current"])
    if (trees["baseline"] / "provenance" / "snapshot_memo.py").exists():
        out.update(run(PART_MEMO, trees["baseline"]))
    for label, arg in (("load: snapshot's command module", "'snapshot'"),
                       ("load: every command module", "")):
        code = LOAD.format(root=str(trees["current"]), arg=arg)
        got = [timed([sys.executable, "-c", code], env) for _ in range(repeats)]
        out[f"{label} (process CPU)"] = round(statistics.median(c for _, c in got) * 1e3, 1)
    return out


def markdown(result: dict) -> str:
    lines = [
        "# prov start-up: baseline vs current (issue #31)",
        "",
        f"`{result['command']}` on {result['machine']}, Python {result['python']}; "
        f"median of {result['repeats']} interleaved runs per case and tree, after two "
        f"warm-up runs each; load average {result['load_before']} before, "
        f"{result['load_after']} after. Baseline: `{result['baseline']}` "
        f"({result['baseline_commit']}); current: the working tree "
        f"({result['current_commit']}). Read the ratios (current / baseline).",
        "",
        "| case | baseline wall | current wall | ratio | baseline CPU | current CPU | ratio |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, row in result["cases"].items():
        b, c = row["baseline"], row["current"]
        lines.append(f"| {name} | {b['wall_ms']} ms | {c['wall_ms']} ms | "
                     f"{row['wall_ms_ratio']:.2f} | {b['cpu_ms']} ms | {c['cpu_ms']} ms | "
                     f"{row['cpu_ms_ratio']:.2f} |")
    lines += ["", "What the structures kept (or removed) for speed save, in-process medians:", "",
              "| part | ms |", "|---|---:|"]
    lines += [f"| {name} | {ms} |" for name, ms in result["parts"].items()]
    return "\n".join(lines) + "\n"


def commit(ref: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", ref],
                          capture_output=True, text=True, check=True).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="main", help="git ref of the baseline tree")
    parser.add_argument("--repeats", type=int, default=21)
    parser.add_argument("--out", type=Path, help="write startup.json and startup.md here")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    rows = run(args)
    result = {
        "command": "bench/bench_startup.py " + " ".join(sys.argv[1:]),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "python": platform.python_version(),
        "repeats": args.repeats,
        "baseline": args.baseline,
        "baseline_commit": commit(args.baseline),
        "current_commit": commit("HEAD") + (" + uncommitted changes" if subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain"], capture_output=True,
            text=True).stdout.strip() else ""),
        "load_before": round(load_before, 1),
        "load_after": round(os.getloadavg()[0], 1),
        **rows,
    }
    text = markdown(result)
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "startup.json").write_text(json.dumps(result, indent=1) + "\n")
        (args.out / "startup.md").write_text(text)


if __name__ == "__main__":
    main()
