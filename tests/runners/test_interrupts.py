"""A sweep's pool worker takes ^C only where stopping is safe (runners/interrupts.py): the
^C is noted wherever it lands in prov's own code, and raised at the next launch."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from runners import interrupts
from runners.launch import Launched, check_launched, standalone, supervised

# The ^C lands while the worker is in prov's own code (here: logging, where an interrupted
# engine once deadlocked its worker's exit); the worker goes on to its next check.
WORKER = textwrap.dedent(
    """
    import logging, os, signal, sys
    from runners import interrupts

    if sys.argv[1] == "defer":
        interrupts.defer()
    logging.basicConfig(stream=open(os.devnull, "w"))
    os.kill(os.getpid(), signal.SIGINT)
    for i in range(2000):
        logging.getLogger("prov").warning("bookkeeping %d", i)
    print("bookkeeping done", interrupts.requested(), flush=True)
    interrupts.check("the cell")
    print("not reached", flush=True)
    """
)


def _worker(mode: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", WORKER, mode], capture_output=True,
                          text=True, timeout=60)


def test_a_deferred_ctrl_c_is_raised_at_the_next_check_not_where_it_lands():
    done = _worker("defer")
    assert done.stdout == "bookkeeping done True\n", done.stderr[-2000:]
    assert done.returncode == -signal.SIGINT  # Python ends an uncaught ^C by the signal
    assert done.stderr.strip().splitlines()[-1] == "KeyboardInterrupt: the cell interrupted"


def test_without_deferring_the_ctrl_c_is_raised_where_it_lands():
    """The control: Python's own ^C stops the worker inside the bookkeeping."""
    done = _worker("python")
    assert done.stdout == "" and done.returncode == -signal.SIGINT, done.stdout
    assert "KeyboardInterrupt" in done.stderr and "the cell interrupted" not in done.stderr


@pytest.fixture
def deferred_ctrl_c(monkeypatch):
    monkeypatch.setattr(interrupts, "_requested", True)


def _touches(marker: Path) -> list[str]:
    return [sys.executable, "-c", f"open({str(marker)!r}, 'w').close()"]


def test_after_a_deferred_ctrl_c_no_program_starts(tmp_path, deferred_ctrl_c):
    marker = tmp_path / "started"
    with pytest.raises(KeyboardInterrupt, match="w interrupted"):
        standalone(_touches(marker), name="w", env={})
    with pytest.raises(KeyboardInterrupt, match="w interrupted"):
        supervised(store=None)(_touches(marker), name="w", env={})
    assert not marker.exists()


def test_a_run_that_ended_well_still_stops_the_caller_after_a_deferred_ctrl_c(
        deferred_ctrl_c):
    with pytest.raises(KeyboardInterrupt, match="w interrupted"):
        check_launched(Launched(0, "run-id"), "w")


def test_a_run_that_ended_well_goes_on_without_a_ctrl_c(tmp_path):
    marker = tmp_path / "started"
    done = standalone(_touches(marker), name="w", env={})
    check_launched(done, "w")
    assert marker.exists()
