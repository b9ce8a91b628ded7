"""The embedded executor's ^C (`prov sweep --jobs N`): the cells' workers are interrupted and
left to record their runs; one whose program cannot stop does not hang the sweep.

The executor's own process pool (spawned; its workers take ^C only at their next launch,
runners/interrupts.py); a worker waits on its program as prov exec's supervisor does (an
engine interrupted inside `logging`'s lock deadlocked on its way out in a full suite run, and
the sweep waited on it for ever).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import time
from multiprocessing.connection import wait as wait_ready
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


def runs_programs_one_after_another(ready: str) -> None:
    """A cell's repeats: launch after launch until a ^C stops it (at a launch: the worker
    notes the ^C wherever it lands, runners/interrupts.py)."""
    from runners.launch import check_launched, standalone

    Path(ready).write_text(str(os.getpid()))
    while True:
        check_launched(standalone([sys.executable, "-c", "pass"], name="repeat", env={}),
                       "repeat")


def _pool_running(fn, ready: Path):
    """The executor's own one-worker pool running fn(ready), once fn has written its pid to
    `ready`."""
    pool = local_exec.new_pool(1)
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
    pool, fut, workers = _pool_running(runs_programs_one_after_another, tmp_path / "ready")
    try:
        local_exec._stop_workers(pool, [fut], grace=120.0)  # fails only a hang
        stopped = fut.exception(timeout=0)
        assert isinstance(stopped, KeyboardInterrupt) and str(stopped) == "repeat interrupted"
        assert sent == [(workers[0].pid, signal.SIGINT)]  # nothing killed
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    assert not _alive(workers[0].pid)


def test_a_worker_the_pools_own_thread_reaped_is_not_killed(sent):
    """Once shut down, the pool's own thread reaps its workers; a second waitpid losing that
    race (`Process.is_alive`) read a worker that had stopped on ^C as alive, and it was sent
    SIGKILL by a pid that could be another process's by then (a full suite run). Here the
    reaping is done by hand before the executor kills what is left."""
    proc = multiprocessing.get_context("spawn").Process(target=int)
    proc.start()
    assert wait_ready([proc.sentinel], 120), "never ended"  # fails only a hang
    os.waitpid(proc.pid, 0)  # as the pool's thread does
    local_exec._kill_alive([proc])
    assert sent == []
    assert local_exec._joined([proc], 0)

