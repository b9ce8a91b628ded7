"""Run collectors concurrently, each with a hard timeout, none able to crash a snapshot."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Collected:
    """What one collector produced: its section (or an unavailable string) and warnings."""

    section: dict[str, Any] | str
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0


class CollectorWarnings(list):
    """A list collectors append warnings to (broken dist-info, unreadable files...)."""


Collector = Callable[[CollectorWarnings], dict[str, Any] | str]


def unavailable(reason: str) -> str:
    return f"unavailable: {reason}"


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def run_one(collector: Collector, timeout: float) -> Collected:
    """Run `collector` in a daemon thread; give up on it after `timeout` seconds.

    A thread stuck in a C call (a hung GPU driver) cannot be killed, but a daemon thread
    cannot keep the process alive either, so prov finishes and records the timeout.
    """
    warnings = CollectorWarnings()
    result: list[Collected] = []

    def target() -> None:
        start = time.perf_counter()
        try:
            section = collector(warnings)
        except Exception as exc:  # a collector bug must not crash the snapshot
            section = unavailable(_one_line(exc))
        result.append(Collected(section, list(warnings), time.perf_counter() - start))

    thread = threading.Thread(target=target, daemon=True, name=f"collector-{collector}")
    start = time.perf_counter()
    thread.start()
    thread.join(timeout)
    if not result:
        return Collected(
            unavailable(f"timed out after {timeout:g} s"),
            list(warnings),
            time.perf_counter() - start,
        )
    return result[0]


def run_all(collectors: dict[str, tuple[Collector, float]]) -> dict[str, Collected]:
    """Run every (collector, timeout) concurrently; returns name -> Collected."""
    out: dict[str, Collected] = {}
    threads = []
    for name, (collector, timeout) in collectors.items():

        def work(
            name: str = name, collector: Collector = collector, timeout: float = timeout
        ) -> None:
            out[name] = run_one(collector, timeout)

        t = threading.Thread(target=work, daemon=True)
        t.start()
        threads.append(t)
    for t in threads:
        t.join()
    return out
