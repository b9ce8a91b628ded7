"""Where the test suite's wall time goes: per area, per file, per fixture, per test.

Reads what `pytest -p tests.timing --times-json RUN.json` wrote (every test and fixture), or
the `--durations=N` lines and the summary line of a pytest log (the N slowest phases only),
and writes one JSON and one Markdown table beside it:

    .venv/bin/python -m pytest -q -p tests.timing --times-json /tmp/after.json
    .venv/bin/python bench/test_times.py --after /tmp/after.json --before-log /tmp/base.log \
        --out bench/results/2026-12-05-cpu-2core/test-times

No test reads these figures: the suite's wall time is a bench figure, never an assertion.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import defaultdict
from pathlib import Path

PHASES = ("setup", "call", "teardown")
def _seconds(entry: dict) -> float:
    return sum(entry.get(p, 0.0) for p in PHASES)


def _area(nodeid: str) -> str:
    """The test file's folder, at most three levels deep (tests/provenance/exec)."""
    parts = nodeid.split("::")[0].split("/")[:-1]
    return "/".join(parts[:3]) or "tests"


def _read_plugin(path: Path) -> dict:
    """The controller's file, with what its pytest-xdist workers measured (PATH.gw0, ...)
    merged in: each test's CPU seconds and processes, and the fixtures' set-ups."""
    doc = json.loads(path.read_text())
    for worker in sorted(path.parent.glob(path.name + ".gw*")):
        try:
            part = json.loads(worker.read_text())
        except ValueError:  # a worker that never finished writing
            continue
        for nodeid, entry in part["tests"].items():
            mine = doc["tests"].setdefault(nodeid, {"outcome": entry.get("outcome")})
            for key in ("cpu", "spawned"):
                if key in entry:
                    mine[key] = entry[key]
        doc["fixtures"] = doc.get("fixtures", []) + part.get("fixtures", [])
        doc["workers"] = doc.get("workers", 0) + 1
    return doc


def from_plugin(path: Path) -> dict:
    doc = _read_plugin(path)
    tests = doc["tests"]
    files: dict[str, float] = defaultdict(float)
    areas: dict[str, float] = defaultdict(float)
    areas_cpu: dict[str, float] = defaultdict(float)
    spawned: dict[str, int] = defaultdict(int)
    for nodeid, entry in tests.items():
        s = _seconds(entry)
        files[nodeid.split("::")[0]] += s
        areas[_area(nodeid)] += s
        areas_cpu[_area(nodeid)] += entry.get("cpu", 0.0)
        for prog, n in entry.get("spawned", {}).items():
            spawned[prog] += n
    by_fixture: dict[str, dict] = {}
    for f in doc["fixtures"]:
        agg = by_fixture.setdefault(f["fixture"], {"fixture": f["fixture"], "scope": f["scope"],
                                                   "setups": 0, "seconds": 0.0})
        agg["setups"] += 1
        agg["seconds"] = round(agg["seconds"] + f["seconds"], 1)
    slowest = sorted(tests.items(), key=lambda kv: -_seconds(kv[1]))
    return {
        "source": str(path), "wall_seconds": doc["wall_seconds"],
        "cpu_seconds": doc.get("cpu_seconds"), "tests": len(tests),
        "workers": doc.get("workers", 0),  # pytest-xdist workers (0: pytest's own process)
        "outcomes": _count(e["outcome"] for e in tests.values()),
        "load_average_at_end": doc.get("load_average"), "cpus": doc.get("cpus"),
        "areas": _rounded(areas), "areas_cpu": _rounded(areas_cpu), "files": _rounded(files, 40),
        "fixtures": sorted(by_fixture.values(), key=lambda f: -f["seconds"])[:25],
        "spawned": dict(sorted(spawned.items(), key=lambda kv: -kv[1])[:15]),
        "slowest": [{"test": k, "seconds": round(_seconds(v), 1), "cpu": v.get("cpu"),
                     **{p: v[p] for p in PHASES if v.get(p, 0) >= 1}} for k, v in slowest[:40]],
    }


DURATION = re.compile(r"^\s*([\d.]+)s (setup|call|teardown)\s+(\S+)")
SUMMARY = re.compile(r"=+ (.*) in ([\d.]+)s")


def from_log(path: Path) -> dict:
    """The `--durations` table and summary line of a pytest log (the N slowest phases)."""
    phases, summary = [], None
    for line in path.read_text(errors="replace").splitlines():
        if m := DURATION.match(line):
            phases.append({"test": m.group(3), "phase": m.group(2), "seconds": float(m.group(1))})
        elif (m := SUMMARY.search(line)) and ("passed" in line or "failed" in line):
            summary = {"result": m.group(1), "pytest_seconds": float(m.group(2))}
    files: dict[str, float] = defaultdict(float)
    areas: dict[str, float] = defaultdict(float)
    for p in phases:
        files[p["test"].split("::")[0]] += p["seconds"]
        areas[_area(p["test"])] += p["seconds"]
    return {"source": str(path), **(summary or {}), "durations_listed": len(phases),
            "listed_seconds": round(sum(p["seconds"] for p in phases), 1),
            "areas_of_listed": _rounded(areas), "files_of_listed": _rounded(files, 40),
            "slowest": phases[:40]}


def _rounded(d: dict[str, float], keep: int | None = None) -> dict[str, float]:
    items = sorted(d.items(), key=lambda kv: -kv[1])[:keep]
    return {k: round(v, 1) for k, v in items}


def _count(values) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for v in values:
        out[v] += 1
    return dict(out)


def _minutes(s: float) -> str:
    return f"{s / 60:.1f} min ({s:.0f} s)"


def markdown(doc: dict, command: str, where: str, json_name: str) -> str:
    lines = [f"# Test-suite wall time ({where})", "",
             f"Figures: [{json_name}]({json_name}), from `bench/test_times.py` over "
             "`pytest -p tests.timing` (every test and fixture) or a pytest `--durations` "
             "log. The machine was shared with other engineers' work: compare before and "
             "after as ratios, not absolute times. No test asserts any of these figures.", "",
             "```", command, "```", ""]
    for label in ("before", "after"):
        run = doc.get(label)
        if not run:
            continue
        wall = run.get("wall_seconds") or run.get("pytest_seconds")
        cpu = f", {_minutes(run['cpu_seconds'])} of CPU" if run.get("cpu_seconds") else ""
        lines += [f"## {label.capitalize()}: {_minutes(wall)}{cpu}", "",
                  f"{run.get('note', '')}", ""]
        areas = run.get("areas") or run.get("areas_of_listed") or {}
        cpus = run.get("areas_cpu", {})
        lines += ["| area | wall s | CPU s |", "|---|---|---|"]
        lines += [f"| `{a}` | {s:.0f} | {cpus.get(a, float('nan')):.0f} |"
                  for a, s in areas.items()]
        lines += [""]
        if run.get("fixtures"):
            lines += ["| fixture (scope) | set-ups | seconds |", "|---|---|---|"]
            lines += [f"| `{f['fixture']}` ({f['scope']}) | {f['setups']} | {f['seconds']:.0f} |"
                      for f in run["fixtures"][:15]]
            lines += [""]
        if run.get("spawned"):
            lines += ["Processes the tests started themselves: " + ", ".join(
                f"`{k}` {v}" for k, v in run["spawned"].items()) + ".", ""]
        lines += ["| slowest tests | wall s | CPU s |", "|---|---|---|"]
        lines += [f"| `{t['test']}`{' (' + t['phase'] + ')' if 'phase' in t else ''} | "
                  f"{t['seconds']:.0f} | {t.get('cpu') or float('nan'):.0f} |"
                  for t in run["slowest"][:25]]
        lines += [""]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, help="a --times-json file of the run before")
    ap.add_argument("--before-log", type=Path, help="a pytest log with --durations, before")
    ap.add_argument("--after", type=Path, help="a --times-json file of the run after")
    ap.add_argument("--after-log", type=Path, help="a pytest log with --durations, after")
    ap.add_argument("--note", action="append", default=[], metavar="LABEL=TEXT",
                    help="a sentence shown under a run's heading (before=..., after=...)")
    ap.add_argument("--out", type=Path, required=True, help="path stem: writes .json and .md")
    args = ap.parse_args()
    doc: dict = {}
    for label in ("before", "after"):
        plugin, log = getattr(args, label), getattr(args, f"{label}_log")
        if plugin:
            doc[label] = from_plugin(plugin)
        elif log:
            doc[label] = from_log(log)
    for note in args.note:
        label, _, text = note.partition("=")
        doc.setdefault(label, {})["note"] = text
    args.out.with_suffix(".json").write_text(json.dumps(doc, indent=1) + "\n")
    command = "python bench/test_times.py " + " ".join(
        f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items()
        if v and k not in ("out", "note")) + f" --out {args.out}"
    args.out.with_suffix(".md").write_text(markdown(doc, command, args.out.parent.name,
                                                           args.out.with_suffix(".json").name))
    print(args.out.with_suffix(".md").read_text())


if __name__ == "__main__":
    main()
