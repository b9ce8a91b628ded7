"""The embedded executor: cells one after another on this machine, into the driver's store."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

from runners.launch import LaunchError
from runners.sweep.cell import CellError, run_cell

Event = Callable[[str, str, dict[str, Any]], None]  # (cell id, state, details)


class LocalExecutor:
    """`deadline` (a time.time() value): cells not started by then are not run, and say so."""

    name = "local"

    def __init__(self, store_root: str, deadline: float | None = None) -> None:
        self.store_root = store_root
        self.deadline = deadline

    def _attempts(self, p: dict[str, Any], retries: int, on_event: Event) -> dict[str, Any]:
        failures: list[str] = []
        for attempt in range(1, retries + 2):
            on_event(p["cell_id"], "running", {"node": socket.gethostname(), "attempt": attempt})
            try:
                out = run_cell(p, self.store_root, {"executor": "local"})
            except CellError as exc:  # would fail the same way again
                failures.append(f"attempt {attempt}: {exc}")
                break
            except (LaunchError, OSError) as exc:
                # (a worker the user's ^C reached raises KeyboardInterrupt: launch.check_launched)
                failures.append(f"attempt {attempt}: {exc}")
                on_event(p["cell_id"], "retrying", {"error": str(exc)})
                continue
            return {**out, "attempts": attempt, "failures": failures}
        return {"error": failures[-1], "failures": failures, "attempts": len(failures)}

    def run(self, payloads: list[dict[str, Any]], retries: int, on_event: Event,
            resources: dict[str, dict[str, Any]] | None = None
            ) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
        """Yield (payload, outcome) per cell; an outcome with `error` failed every attempt."""
        for p in payloads:
            if self.deadline is not None and time.time() >= self.deadline:
                yield p, {"not_run": "the sweep's time budget was spent before this cell "
                                     "started"}
                continue
            yield p, self._attempts(p, retries, on_event)

    def close(self) -> None:
        pass
