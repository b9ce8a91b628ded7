"""^C in a sweep's pool worker, taken only where stopping is safe.

Python turns SIGINT into a KeyboardInterrupt raised wherever the worker happens to be: in
prov's own bookkeeping, between a run's record and its cell's, inside `logging`'s lock (seen
in a sweep worker), where what it leaves half-done can hang the worker's exit and leave the
sweep to its grace periods (runners/sweep/local_exec.py). A pool worker therefore notes the
^C instead (`defer`, the pool's initializer) and raises it at the next launch (`check`):
while a program runs, prov exec's supervisor forwards the ^C to it and the run is recorded
interrupted (launch.check_launched); between programs, the next one is never started. A
process that never called `defer` keeps Python's own ^C.
"""

from __future__ import annotations

import signal

_requested = False


def defer() -> None:
    """From now on a ^C to this process is noted, not raised (a pool worker's initializer)."""
    signal.signal(signal.SIGINT, _note)


def _note(_signum: int, _frame: object) -> None:
    global _requested
    _requested = True


def requested() -> bool:
    """Whether a deferred ^C reached this process."""
    return _requested


def check(what: str = "the cell") -> None:
    """Raise the deferred ^C here, a point where stopping leaves nothing half-done."""
    if _requested:
        raise KeyboardInterrupt(f"{what} interrupted")
