"""Take a snapshot: run every collector under its timeout and build the manifest."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import Any

from provenance.collectors import answer_cache, cpu, engines, env, gpu, host, os_info, torch_probe
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
    started: Any = None  # the --python collector child, when the CLI started it early
    progress: Any = None  # progress(done, total) as --verify-files re-hashes files


def _python_in_process(verify: bool, progress: Any = None):
    """The running interpreter's python section, from the kept answer (`answer_cache`, as
    for a --python child) unless something it was read from changed or `verify`."""

    def collect(warnings: CollectorWarnings) -> dict[str, Any]:
        paths = list(sys.path)
        key = answer_cache.key_material(sys.executable) + [paths]
        kept = None if verify else answer_cache.entry_path("python-here", key)
        result = answer_cache.load(kept) if kept else None
        answer = "cached"
        if result is None:
            from provenance.collectors import python_env  # a kept answer needs none of it

            answer, started_ns = "collected", time.time_ns()
            result = python_env.collect(paths, verify=verify, progress=progress)
            if kept:
                deps = answer_cache.stamps(paths, list(python_env.metadata_dirs(paths)))
                answer_cache.save(kept, result, deps, started_ns)
        warnings.extend(result["warnings"])
        result["section"]["_stats"] = {**result["stats"], "answer": answer}
        return result["section"]

    return collect


def _python_foreign(python: str, verify: bool, timeout: float, started: Any = None,
                    progress: Any = None):
    """Run the stdlib-only collector inside `python`; its own sys.path is what gets scanned.
    `started`: the child the CLI already started (`provenance.collectors.foreign.start`)."""

    def collect(warnings: CollectorWarnings) -> dict[str, Any] | str:
        from provenance.collectors import foreign

        try:
            proc = started or foreign.start(python, verify, progress=progress is not None)
        except FileNotFoundError:
            return unavailable(f"no interpreter at {python}")
        return foreign.finish(proc, python, timeout, warnings, on_progress=progress)

    return collect


def take_snapshot(options: SnapshotOptions | None = None) -> tuple[Manifest, list[str]]:
    """Collect every section; returns the manifest and the warnings met on the way."""
    options = options or SnapshotOptions()
    py_timeout = TIMEOUTS["python_verify" if options.verify_files else "python"]
    python_collector = (
        _python_foreign(options.python, options.verify_files, py_timeout, options.started,
                        options.progress)
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
