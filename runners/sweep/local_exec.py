"""The embedded executor: cells on this machine, into the driver's store.

With `jobs` 1 (the default) cells run one after another in this process, straight into the
driver's store. With `jobs` N > 1 up to N cells run at once, each in a worker process of its
own with a private store whose objects come back for the driver to merge, as a Ray node's do
(one GPU shared by small models: give the engine a memory share, e.g. vLLM's
`gpu_memory_utilization`). A cell's repeats always run one after another in its worker.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import socket
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from multiprocessing.connection import wait as wait_ready
from typing import Any

from runners import interrupts
from runners.launch import LaunchError
from runners.sweep.cell import CellError, run_cell

Event = Callable[[str, str, dict[str, Any]], None]  # (cell id, state, details)
OUT_OF_BUDGET = "the sweep's time budget was spent before this cell started"


def _attempt(p: dict[str, Any], store_root: str | None, node: dict[str, Any]) -> dict[str, Any]:
    """One attempt at a cell, here or in a pool worker; errors come back as data (some do
    not pickle). A worker the user's ^C reached raises KeyboardInterrupt at its next launch
    (runners/interrupts.py): not caught."""
    try:
        return {"out": run_cell(p, store_root, node)}
    except CellError as exc:  # would fail the same way again
        return {"fatal": str(exc)}
    except (LaunchError, OSError) as exc:
        return {"retry": str(exc)}


def _settle(res: dict[str, Any], p: dict[str, Any], attempt: int, failures: list[str],
            retries: int, on_event: Event) -> dict[str, Any] | None:
    """The cell's outcome after this attempt, or None to try it again."""
    if "out" in res:
        return {**res["out"], "attempts": attempt, "failures": failures}
    failures.append(f"attempt {attempt}: {res.get('fatal') or res.get('retry')}")
    if "retry" in res and attempt <= retries:
        on_event(p["cell_id"], "retrying", {"error": res["retry"]})
        return None
    return {"error": failures[-1], "failures": failures, "attempts": attempt}


def _running(p: dict[str, Any], attempt: int, on_event: Event) -> None:
    on_event(p["cell_id"], "running", {"node": socket.gethostname(), "attempt": attempt})


# After ^C, how long the cells' workers get to stop their programs (and record their runs
# interrupted) before what is left of them is killed: a program can hang on its way out
# (an engine interrupted inside `logging`'s lock deadlocked at exit), never the sweep.
STOP_GRACE_S = 30.0


def _stop_workers(pool: ProcessPoolExecutor, running: list[Future],
                  grace: float = STOP_GRACE_S) -> None:
    """^C to each cell's worker (as the user's ^C would: a `kill -INT` reaches the driver
    alone). Cells not ended after `grace`: SIGKILL to the programs their workers started
    (each worker's supervisor then records its run); after another `grace`, to the workers.
    Then the pool is shut down, and a worker that does not exit is killed."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    for proc in procs:
        _signal(proc.pid, signal.SIGINT)
    if not _ended(running, grace):
        from provenance.exec import descendants

        for proc in procs:
            for pid in descendants(proc.pid)[1:] if not _exited(proc) else ():
                _signal(pid, signal.SIGKILL)
        if not _ended(running, grace):
            _kill_alive(procs)
    pool.shutdown(wait=False, cancel_futures=True)
    if not _joined(procs, grace):
        _kill_alive(procs)
        _joined(procs, grace)


def _exited(proc) -> bool:
    """Whether a worker has ended, read from its sentinel, which does not reap it. The pool's
    own thread reaps its workers once shut down; a second waitpid that loses that race
    (`Process.is_alive`, `join`) reads the dead worker as alive, and it would be killed by
    a pid that may be another process's by then."""
    try:
        return bool(wait_ready([proc.sentinel], 0))
    except ValueError:  # the process object was closed: it has ended
        return True


def _kill_alive(procs: list) -> None:
    for proc in procs:
        if not _exited(proc):
            _signal(proc.pid, signal.SIGKILL)


def _signal(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signum)


def _ended(futures: list[Future], seconds: float) -> bool:
    return not wait(futures, timeout=seconds).not_done


def _joined(procs: list, seconds: float) -> bool:
    """Wait up to `seconds` for every process to end (on their sentinels); whether all did.
    Those that ended are gone when it returns: a sentinel is ready once the process is
    exiting, and its wait then reaps it (or finds the pool's thread did)."""
    deadline = time.monotonic() + seconds
    pending = [proc for proc in procs if not _exited(proc)]
    while pending and (left := deadline - time.monotonic()) > 0:
        with contextlib.suppress(ValueError):  # one was closed meanwhile: _exited says so
            wait_ready([proc.sentinel for proc in pending], left)
        pending = [proc for proc in pending if not _exited(proc)]
    for proc in procs:
        if proc not in pending:
            with contextlib.suppress(ValueError):
                proc.join(STOP_GRACE_S)  # bounded by the exit under way, not by the grace
    return not pending


def new_pool(jobs: int) -> ProcessPoolExecutor:
    """The cells' workers: spawned (the driver holds threads, the progress display, that a
    fork would copy), each taking ^C only at its next launch (runners/interrupts.py)."""
    return ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"),
                               initializer=interrupts.defer)


class LocalExecutor:
    """`deadline` (a time.time() value): cells not started by then are not run, and say so.
    `jobs`: how many cells run at once."""

    name = "local"

    def __init__(self, store_root: str, deadline: float | None = None, jobs: int = 1) -> None:
        self.store_root = store_root
        self.deadline = deadline
        self.jobs = max(1, int(jobs))

    def _late(self) -> bool:
        return self.deadline is not None and time.time() >= self.deadline

    def _attempts(self, p: dict[str, Any], retries: int, on_event: Event) -> dict[str, Any]:
        failures: list[str] = []
        attempt = 1
        while True:
            _running(p, attempt, on_event)
            res = _attempt(p, self.store_root, {"executor": "local"})
            outcome = _settle(res, p, attempt, failures, retries, on_event)
            if outcome is not None:
                return outcome
            attempt += 1

    def run(self, payloads: list[dict[str, Any]], retries: int, on_event: Event,
            resources: dict[str, dict[str, Any]] | None = None
            ) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
        """Yield (payload, outcome) per cell; an outcome with `error` failed every attempt."""
        if self.jobs > 1 and len(payloads) > 1:
            yield from self._run_pool(payloads, retries, on_event)
            return
        for p in payloads:
            if self._late():
                yield p, {"not_run": OUT_OF_BUDGET}
                continue
            yield p, self._attempts(p, retries, on_event)

    def _run_pool(self, payloads: list[dict[str, Any]], retries: int, on_event: Event
                  ) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
        """Up to `jobs` cells at once; yielded as they finish (the driver stores each)."""
        queue = list(payloads)
        running: dict[Future, tuple[dict[str, Any], int, list[str]]] = {}
        pool = new_pool(self.jobs)
        try:
            while queue or running:
                while queue and len(running) < self.jobs:
                    p = queue.pop(0)
                    if self._late():
                        yield p, {"not_run": OUT_OF_BUDGET}
                        continue
                    self._submit(pool, running, p, 1, [], on_event)
                if not running:
                    continue
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for fut in done:
                    p, attempt, failures = running.pop(fut)
                    try:
                        res = fut.result()
                    except Exception as exc:  # the worker process died (BrokenProcessPool)
                        res = {"fatal": f"worker process: {type(exc).__name__}: {exc}"}
                    outcome = _settle(res, p, attempt, failures, retries, on_event)
                    if outcome is None:  # retry
                        self._submit(pool, running, p, attempt + 1, failures, on_event)
                    else:
                        yield p, outcome
        except KeyboardInterrupt:
            _stop_workers(pool, list(running))
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def _submit(self, pool, running: dict, p: dict[str, Any], attempt: int,
                failures: list[str], on_event: Event) -> None:
        _running(p, attempt, on_event)
        node = {"executor": "local", "jobs": self.jobs}
        running[pool.submit(_attempt, p, None, node)] = (p, attempt, failures)

    def close(self) -> None:
        pass
