"""The Python collector inside another interpreter (`prov snapshot --python PATH`), as a
child process that may be started early: the CLI's fast path starts it before prov's own
imports, so the child's start-up overlaps them, and the snapshot collects its answer.

Standard library only, and cheap to import (no prov module): it runs before everything else.
"""

from __future__ import annotations

import json
import os
import subprocess

_PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def command(python: str, verify: bool) -> list[str]:
    """The child's argv: the stdlib-only collector on the interpreter's own sys.path."""
    code = (
        "import sys; paths = [p for p in sys.path if p]; "
        f"sys.path.insert(0, {_PROJECT_ROOT!r}); "
        "from provenance.collectors.python_env import main; "
        f"main(paths, {verify!r})"
    )
    return [python, "-c", code]


def start(python: str, verify: bool) -> subprocess.Popen:
    """Start the collector in `python` (OSError when it cannot be executed)."""
    return subprocess.Popen(command(python, verify), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)


def finish(proc: subprocess.Popen, python: str, timeout: float, warnings: list) -> dict | str:
    """The python section from a started child, or `unavailable: <reason>`."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return f"unavailable: {python} timed out after {timeout:g} s"
    if proc.returncode != 0:
        last = (err.strip().splitlines() or ["no output"])[-1]
        return f"unavailable: {python} failed: {last[:200]}"
    try:
        result = json.loads(out)
        section = result["section"]
    except (ValueError, KeyError, TypeError):
        return f"unavailable: {python} did not answer as prov's collector does"
    warnings.extend(result.get("warnings", []))
    section["_stats"] = result.get("stats", {})
    return section


def stop(proc: subprocess.Popen | None) -> None:
    """Reap a started child that will not be collected (the command failed first)."""
    if proc is not None and proc.poll() is None:
        proc.kill()
        proc.wait()
