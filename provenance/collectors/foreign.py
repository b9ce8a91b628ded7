"""The Python collector inside another interpreter (`prov snapshot --python PATH`), as a
child process. When nothing the child's last answer depends on has changed (`stamped`), no
child starts.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import threading
import time
from dataclasses import dataclass

from provenance.collectors import stamped
from provenance.collectors.python_env import PROGRESS, answer_key

_PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@dataclass
class Started:
    """A collection under way: a child process, or the still-valid answer of an earlier one."""

    proc: subprocess.Popen | None
    verify: bool
    started_ns: int = 0
    cached: dict | None = None
    progress: bool = False  # the child reports re-hashing progress on stderr


def command(python: str, verify: bool, progress: bool = False) -> list[str]:
    """The child's argv: the stdlib-only collector on the interpreter's own sys.path."""
    code = (
        "import sys; paths = [p for p in sys.path if p]; "
        f"sys.path.insert(0, {_PROJECT_ROOT!r}); "
        "from provenance.collectors.python_env import main; "
        f"main(paths, {verify!r}, {progress!r})"
    )
    return [python, "-c", code]


def start(python: str, verify: bool, use_cache: bool = True, progress: bool = False) -> Started:
    """Start the collector in `python` (OSError when it cannot be executed), unless its
    earlier answer still holds (never with `verify`: that must re-hash every file).
    `progress`: the child reports re-hashing on stderr, for `finish(on_progress=...)`."""
    if use_cache and not verify:
        cached = stamped.load(answer_key(python))
        if isinstance(cached, dict):
            return Started(None, verify, cached=cached)
    started_ns = time.time_ns()
    proc = subprocess.Popen(command(python, verify, progress), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    return Started(proc, verify, started_ns, progress=progress)


def finish(started: Started, python: str, timeout: float, warnings: list,
           on_progress=None) -> dict | str:
    """The python section from a started collection, or `unavailable: <reason>`.
    `on_progress(done, total)`: called as the child re-hashes files (if started so)."""
    result = started.cached
    if result is None:
        result = _answer(started, python, timeout, on_progress)
        if isinstance(result, str):
            return result
    section = result["section"]
    warnings.extend(result.get("warnings", []))
    stats = dict(result.get("stats", {}))
    stats["answer"] = "cached" if started.cached is not None else "collected"
    section["_stats"] = stats
    return section


def _answer(started: Started, python: str, timeout: float, on_progress=None) -> dict | str:
    """The child's parsed answer (kept when it may be: `stamped.save`), or the reason it
    has none."""
    proc = started.proc
    assert proc is not None
    try:
        if started.progress:
            out, err = _communicate_with_progress(proc, timeout, on_progress)
        else:
            out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(proc)
        return f"unavailable: {python} timed out after {timeout:g} s"
    if proc.returncode != 0:
        last = (err.strip().splitlines() or ["no output"])[-1]
        return f"unavailable: {python} failed: {last[:200]}"
    try:
        result = json.loads(out)
        deps = result.pop("deps", None)
        if not isinstance(result["section"], dict):
            raise TypeError
    except (ValueError, KeyError, TypeError, AttributeError):
        return f"unavailable: {python} did not answer as prov's collector does"
    if isinstance(deps, dict) and not started.verify:
        stamped.save(answer_key(python), result, deps, started.started_ns)
    return result


def _communicate_with_progress(proc: subprocess.Popen, timeout: float, on_progress):
    """`proc.communicate(timeout)`, passing the child's progress lines on stderr to
    `on_progress(done, total)` as they come; the other stderr lines are returned as usual."""
    out: list[str] = []
    err: list[str] = []

    def read_stderr() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            if not line.startswith(PROGRESS):
                err.append(line)
            elif on_progress is not None:
                done, _, total = line[len(PROGRESS):].partition(" ")
                with contextlib.suppress(ValueError):
                    on_progress(int(done), int(total))

    readers = [threading.Thread(target=read_stderr, daemon=True),
               threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True)]
    for reader in readers:
        reader.start()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        for reader in readers:  # bounded: a process the child started may hold the pipes
            reader.join(1.0)
        raise
    for reader in readers:  # the child exited: its pipes reach EOF
        reader.join()
    return "".join(out), "".join(err)


def _kill(proc: subprocess.Popen) -> None:
    """Kill a timed-out child and reap it, without waiting for its pipes to reach EOF (a
    process it started could hold them open long after it; they close with the objects)."""
    proc.kill()
    proc.wait()


def stop(started: Started | None) -> None:
    """Reap a started child that will not be collected (the command failed first)."""
    proc = started.proc if started is not None else None
    if proc is not None and proc.poll() is None:
        proc.kill()
        proc.wait()
