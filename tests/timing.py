"""A pytest plugin that writes where the suite's wall time goes: `-p tests.timing
--times-json PATH` records each test's setup/call/teardown seconds and CPU seconds (pytest's
own and its reaped children's: a figure the machine's other load does not inflate), each
fixture's setup seconds (with the test that paid for it) and the processes each test
started itself, by program name, for bench/test_times.py to summarise.

It only measures; no test reads these figures.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

_tests: dict[str, dict] = {}
_fixtures: list[dict] = []
_spawned: Counter[str] = Counter()
_t0 = time.time()


def _cpu() -> float:
    """CPU seconds of this process and of the children it has waited for."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


_cpu0 = _cpu()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--times-json", default=None,
                     help="write per-test and per-fixture wall times to this JSON file")


def _program(args) -> str:
    argv = [args] if isinstance(args, (str, bytes, os.PathLike)) else list(args or [""])
    first = os.fsdecode(argv[0]).split()[0] if argv and argv[0] else ""
    name = os.path.basename(first)
    if name.startswith("python") and "-m" in argv[1:3]:
        return f"python -m {argv[argv.index('-m') + 1]}"
    return name


def pytest_configure(config: pytest.Config) -> None:
    if not config.getoption("--times-json"):
        return
    original = subprocess.Popen.__init__

    def counting_init(self, args, *a, **kw):
        _spawned[_program(args)] += 1
        original(self, args, *a, **kw)

    subprocess.Popen.__init__ = counting_init  # type: ignore[method-assign]


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef, request):
    t = time.perf_counter()
    yield
    seconds = time.perf_counter() - t
    if seconds >= 0.05:  # the cheap ones would only bury the expensive ones
        _fixtures.append({"fixture": fixturedef.argname, "scope": fixturedef.scope,
                          "seconds": round(seconds, 3),
                          "test": getattr(request.node, "nodeid", "")})


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _spawned.clear()
    cpu = _cpu()
    yield
    entry = _tests.setdefault(item.nodeid, {"outcome": "passed"})
    entry["cpu"] = round(_cpu() - cpu, 3)
    if _spawned:
        entry["spawned"] = dict(_spawned)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    entry = _tests.setdefault(report.nodeid, {"outcome": "passed"})
    entry[report.when] = round(report.duration, 3)
    if report.failed or (report.skipped and report.when != "teardown"):
        entry["outcome"] = report.outcome


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    path = session.config.getoption("--times-json")
    if not path:
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:  # under pytest-xdist each worker keeps its own file beside the controller's
        path = f"{path}.{worker}"
    doc = {"wall_seconds": round(time.time() - _t0, 1), "cpu_seconds": round(_cpu() - _cpu0, 1),
           "exitstatus": int(exitstatus),
           "load_average": list(os.getloadavg()), "cpus": os.cpu_count(),
           "tests": _tests, "fixtures": _fixtures}
    Path(path).write_text(json.dumps(doc, indent=1) + "\n")
