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

import pytest

from runners.sweep import local_exec

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


@pytest.fixture
def sent(monkeypatch) -> list[tuple[int, int]]:
    """(pid, signal) of every signal the executor sends, each still sent."""
    record: list[tuple[int, int]] = []
    real = local_exec._signal

    def signal_and_note(pid: int, signum: int) -> None:
        record.append((pid, signum))
        real(pid, signum)

    monkeypatch.setattr(local_exec, "_signal", signal_and_note)
    return record


def test_a_worker_whose_program_ignores_ctrl_c_gets_it_killed(tmp_path: Path, sent):
    pool, fut, workers = _pool_running(waits_on_a_deaf_program, tmp_path / "ready")
    program = int((tmp_path / "ready").read_text())
    try:
        local_exec._stop_workers(pool, [fut], grace=5.0)
        # ^C to the worker; its program, still running after the grace, killed; the worker's
        # wait saw that and the cell ended (-9), with no signal to the worker in between
        assert sent[:2] == [(workers[0].pid, signal.SIGINT), (program, signal.SIGKILL)]
        assert fut.result(timeout=0) == -signal.SIGKILL
        assert not _alive(program)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    assert not _alive(workers[0].pid)


def test_a_worker_that_stops_on_ctrl_c_is_left_to_stop(tmp_path: Path, sent):
    pool, fut, workers = _pool_running(sleeps, tmp_path / "ready")
    try:
        local_exec._stop_workers(pool, [fut], grace=120.0)  # fails only a hang
        assert isinstance(fut.exception(timeout=0), KeyboardInterrupt)
        assert sent == [(workers[0].pid, signal.SIGINT)]  # nothing killed
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    assert not _alive(workers[0].pid)
