"""The embedded executor's ^C (`prov sweep --jobs N`): the cells' workers are interrupted and
left to record their runs; one whose program cannot stop does not hang the sweep.

A real process pool, started with spawn as the executor starts it; the worker waits on its
program as prov exec's supervisor does (an engine interrupted inside `logging`'s lock
deadlocked on its way out in a full suite run, and the sweep waited on it for ever).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from runners.sweep.local_exec import _stop_workers

DEAF = ("import os, signal, sys, time\n"
        "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
        "open(sys.argv[1], 'w').write(str(os.getpid()))\n"
        "time.sleep(600)\n")


def waits_on_a_deaf_program(ready: str) -> int:
    """Start a program that ignores ^C and wait for it, ^C or not (a supervisor's loop)."""
    child = subprocess.Popen([sys.executable, "-c", DEAF, ready])
    while True:
        try:
            return child.wait()
        except KeyboardInterrupt:
            continue


def sleeps(ready: str) -> None:
    Path(ready).write_text(str(os.getpid()))
    time.sleep(600)


def _pool_running(fn, ready: Path):
    """A one-worker pool running fn(ready), once fn has written its pid to `ready`."""
    pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
    fut = pool.submit(fn, str(ready))
    deadline = time.monotonic() + 120  # fails only a hang
    while not (ready.exists() and ready.read_text()):
        assert time.monotonic() < deadline, "never started"
        time.sleep(0.05)
    return pool, fut, list(pool._processes.values())


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] != b"Z"  # a zombie has ended
    except FileNotFoundError:
        return False


def test_a_worker_whose_program_ignores_ctrl_c_gets_it_killed(tmp_path: Path):
    pool, fut, workers = _pool_running(waits_on_a_deaf_program, tmp_path / "ready")
    program = int((tmp_path / "ready").read_text())
    try:
        _stop_workers(pool, [fut], grace=1.0)
        # the program was killed, the worker's wait saw it and returned: the cell ended and
        # its worker exited when the pool shut down (not killed)
        assert fut.result(timeout=0) == -signal.SIGKILL
        assert not _alive(program)
        assert [w.exitcode for w in workers] == [0]
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def test_a_worker_that_stops_on_ctrl_c_is_left_to_stop(tmp_path: Path):
    pool, fut, workers = _pool_running(sleeps, tmp_path / "ready")
    try:
        _stop_workers(pool, [fut], grace=120.0)  # fails only a hang
        assert isinstance(fut.exception(timeout=0), KeyboardInterrupt)
        assert [w.exitcode for w in workers] == [0]
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
