"""Run collectors concurrently, each with a hard timeout, none able to crash a snapshot."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from provenance.model.facts import unavailable  # noqa: F401  (the snapshot imports it here)


@dataclass
class Collected:
    """What one collector produced: its section (or an unavailable string) and warnings."""

    section: dict[str, Any] | str
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0


class CollectorWarnings(list):
    """A list collectors append warnings to (broken dist-info, unreadable files...)."""


Collector = Callable[[CollectorWarnings], dict[str, Any] | str]


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


class _Running:
    """One collector started in a daemon thread: a thread stuck in a C call (a hung GPU
    driver) cannot be killed, but a daemon thread cannot keep the process alive either, so
    prov finishes and records the timeout."""

    def __init__(self, collector: Collector, timeout: float) -> None:
        self.warnings = CollectorWarnings()
        self.result: list[Collected] = []
        self.timeout = timeout
        self.start = time.perf_counter()
        self.thread = threading.Thread(target=self._target, args=(collector,), daemon=True,
                                       name=f"collector-{collector}")
        self.thread.start()

    def _target(self, collector: Collector) -> None:
        try:
            section = collector(self.warnings)
        except Exception as exc:  # a collector bug must not crash the snapshot
            section = unavailable(_one_line(exc))
        self.result.append(Collected(section, list(self.warnings),
                                     time.perf_counter() - self.start))

    def wait(self) -> Collected:
        """Its result, or `timed out` once `timeout` seconds have passed since it started."""
        self.thread.join(max(0.0, self.start + self.timeout - time.perf_counter()))
        if not self.result:
            return Collected(
                unavailable(f"timed out after {self.timeout:g} s"),
                list(self.warnings),
                time.perf_counter() - self.start,
            )
        return self.result[0]


def run_one(collector: Collector, timeout: float) -> Collected:
    """Run `collector` in a daemon thread; give up on it after `timeout` seconds."""
    return _Running(collector, timeout).wait()


def run_all(collectors: dict[str, tuple[Collector, float]]) -> dict[str, Collected]:
    """Run every (collector, timeout) concurrently, one thread each; name -> Collected.
    Each timeout counts from its collector's start, as with `run_one`."""
    running = {name: _Running(collector, timeout)
               for name, (collector, timeout) in collectors.items()}
    return {name: r.wait() for name, r in running.items()}
