"""Take a snapshot: run every collector under its timeout and build the manifest."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import Any

from provenance.collectors import (
    cpu,
    engines,
    env,
    foreign,
    gpu,
    host,
    os_info,
    python_env,
    stamped,
    torch_probe,
)
from provenance.collectors.base import Collected, CollectorWarnings, run_all, run_one, unavailable
from provenance.model import Manifest

# Seconds before a collector is given up on; the python one re-hashes files with --verify-files.
TIMEOUTS = {
    "python": 60.0,
    "python_verify": 900.0,
    "os": 15.0,
    "cpu": 5.0,
    "gpu": 15.0,
    "env": 5.0,
    "host": 5.0,
    "torch": 120.0,
}


@dataclass
class SnapshotOptions:
    python: str | None = None  # another interpreter to inspect; None: the running one
    verify_files: bool = False
    progress: Any = None  # progress(done, total) as --verify-files re-hashes files


def _python_in_process(verify: bool, progress: Any = None):
    """The running interpreter's python section, from the kept answer (`stamped`, as for a
    --python child) unless something it was read from changed or `verify`."""

    def collect(warnings: CollectorWarnings) -> dict[str, Any]:
        paths = list(sys.path)
        kept = None if verify else python_env.answer_key(sys.executable, paths)
        result = stamped.load(kept) if kept else None
        answer = "cached"
        if not isinstance(result, dict):
            answer, started_ns = "collected", time.time_ns()
            result = python_env.collect(paths, verify=verify, progress=progress)
            if kept:
                stamped.save(kept, result, python_env.answer_deps(paths), started_ns)
        warnings.extend(result["warnings"])
        result["section"]["_stats"] = {**result["stats"], "answer": answer}
        return result["section"]

    return collect


def _python_foreign(python: str, verify: bool, timeout: float, progress: Any = None):
    """Run the stdlib-only collector inside `python`; its own sys.path is what gets scanned."""

    def collect(warnings: CollectorWarnings) -> dict[str, Any] | str:
        try:
            proc = foreign.start(python, verify, progress=progress is not None)
        except FileNotFoundError:
            return unavailable(f"no interpreter at {python}")
        return foreign.finish(proc, python, timeout, warnings, on_progress=progress)

    return collect


def take_snapshot(options: SnapshotOptions | None = None) -> tuple[Manifest, list[str]]:
    """Collect every section; returns the manifest and the warnings met on the way."""
    options = options or SnapshotOptions()
    py_timeout = TIMEOUTS["python_verify" if options.verify_files else "python"]
    python_collector = (
        _python_foreign(options.python, options.verify_files, py_timeout, options.progress)
        if options.python
        else _python_in_process(options.verify_files, options.progress)
    )
    results: dict[str, Collected] = run_all(
        {
            "python": (python_collector, py_timeout),
            "os": (os_info.collect, TIMEOUTS["os"]),
            "cpu": (cpu.collect, TIMEOUTS["cpu"]),
            "gpu": (gpu.collect, TIMEOUTS["gpu"]),
            "env": (env.collect, TIMEOUTS["env"]),
            "host": (host.collect, TIMEOUTS["host"]),
        }
    )
    python_section = results["python"].section
    stats: dict[str, Any] = {}
    packages: dict[str, Any] = {}
    if isinstance(python_section, dict):
        stats = python_section.pop("_stats", {})
        packages = python_section.get("packages", {})

    torch_entry = packages.get("torch")
    if isinstance(torch_entry, dict):
        fingerprint = str(torch_entry.get("fingerprint", ""))
        results["torch"] = run_one(
            lambda w: torch_probe.collect(w, python=options.python, torch_fingerprint=fingerprint),
            TIMEOUTS["torch"],
        )
    else:
        results["torch"] = Collected({"installed": False})
    results["engines"] = Collected(engines.collect(packages))

    facts: dict[str, Any] = {name: c.section for name, c in results.items()}
    warnings = [w for c in results.values() for w in c.warnings]
    facts["collectors"] = {
        name: {
            "status": c.section if isinstance(c.section, str) else "ok",
            "seconds": round(c.seconds, 4),
        }
        for name, c in results.items()
    }
    for key, value in stats.items():
        facts["collectors"]["python"][key] = value
    if warnings:
        facts["warnings"] = warnings
    return Manifest(facts), warnings
