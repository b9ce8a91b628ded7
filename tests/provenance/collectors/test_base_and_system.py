"""Timeouts, failures, and the small system collectors."""

from __future__ import annotations

import os
import platform
import threading
import time
from pathlib import Path

from provenance.collectors import cpu, gpu
from provenance.collectors.base import run_all, run_one


def test_a_hung_collector_times_out_and_the_rest_finish():
    release = threading.Event()

    def hang(warnings):
        release.wait(30)
        return {"never": True}

    start = time.monotonic()
    results = run_all({"hung": (hang, 0.3), "fine": (lambda w: {"ok": True}, 5)})
    assert time.monotonic() - start < 20  # the hung collector would hold it 30 s
    assert results["hung"].section == "unavailable: timed out after 0.3 s"
    assert results["fine"].section == {"ok": True}
    release.set()


def test_a_failing_collector_is_unavailable():
    def boom(warnings):
        raise RuntimeError("probe exploded\nsecond line")

    assert run_one(boom, 5).section == "unavailable: RuntimeError: probe exploded"


def test_cpu_flags_come_from_cpuinfo():
    section = cpu.collect([])
    assert section["arch"] == platform.machine()
    assert section["logical_cores"] == os.cpu_count()
    if platform.machine() == "x86_64":
        flags = set(Path("/proc/cpuinfo").read_text().split("flags")[1].split("\n")[0].split())
        assert set(section["isa_flags"]) <= flags
        assert ("avx2" in section["isa_flags"]) == ("avx2" in flags)
        assert "smep" not in section["isa_flags"]  # security feature, not arithmetic


def test_no_gpu_is_a_normal_recorded_state():
    section = gpu.collect([])
    if gpu.kernel_driver_present():
        assert section["count"] >= 0
    else:
        assert section == {"count": 0, "driver": section["driver"]}
        assert section["driver"].startswith("none:")
