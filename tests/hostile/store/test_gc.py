"""kill -9 of real `prov exec` runs at random points; fsck lists the leftovers, gc removes
them, fsck is clean, and the finished runs lost nothing."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.exec_support import PROV, PYTHON, prov, runs_json

KILLS = 10
# Writes a PROV_RUN_DIR file and ~3 MB of stdout over about a second.
SLOW = ("import os, sys, time\n"
        "open(os.environ['PROV_RUN_DIR'] + '/state.bin', 'wb').write(os.urandom(200000))\n"
        "for i in range(3000):\n"
        "    sys.stdout.write('y' * 1023 + '\\n'); sys.stdout.flush(); time.sleep(0.0003)\n")


def _fsck(env) -> dict:
    p = prov("store", "fsck", "--json", env=env, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    return json.loads(p.stdout)


def _on_disk(store: Path) -> set[str]:
    found = set()
    for sub in ("tmp", "runs"):
        if (store / sub).is_dir():
            found |= {str(p) for p in (store / sub).iterdir()}
    return found


def _finished(env, text: str) -> str:
    p = prov("exec", "--", "echo", text, env=env)
    assert p.returncode == 0, p.stderr
    return runs_json(env)[0]["run_id"]


def _commands_alive(store: Path) -> list[int]:
    """Pids of the store's runs' commands still alive (prov gives each PROV_RUN_DIR)."""
    mark = f"PROV_RUN_DIR={store}/runs/".encode()
    alive = []
    for d in Path("/proc").iterdir():
        try:
            if d.name.isdigit() and mark in (d / "environ").read_bytes():
                alive.append(int(d.name))
        except OSError:  # gone meanwhile
            continue
    return alive


def _kill_at_random(env, rng: random.Random) -> None:
    for _ in range(KILLS):
        proc = subprocess.Popen([PROV, "exec", "--", PYTHON, "-c", SLOW], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                stdin=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.05, 1.5))  # a random point of the run: not a wait
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    # the commands die with prov (PDEATHSIG): gc must not find one still holding its files
    deadline = time.monotonic() + 60
    while alive := _commands_alive(Path(env["PROV_STORE"])):
        assert time.monotonic() < deadline, f"commands outlived prov: {alive}"
        time.sleep(0.1)


@pytest.mark.timeout(300)
def test_kill9_leftovers_listed_then_collected(penv):
    store = Path(penv["PROV_STORE"])
    kept = {_finished(penv, "first"): b"first\n"}
    _kill_at_random(penv, random.Random(19))
    kept[_finished(penv, "last")] = b"last\n"
    report = _fsck(penv)
    left = report["leftovers"]
    listed = {x["path"] for x in left["temp_files"] + left["run_dirs"]}
    assert listed == _on_disk(store) and listed, report["leftovers"]
    p = prov("store", "gc", "--grace", "0", "--objects", env=penv, timeout=120)
    assert p.returncode == 0, p.stderr
    after = _fsck(penv)
    assert after["ok"] and not after["orphaned"] and not after["stale_runs"], after
    assert not after["unindexed_runs"] and _on_disk(store) == set(), after
    assert after["leftovers"] == {"temp_files": [], "run_dirs": [], "kept": []}
    for run_id, text in kept.items():
        p = prov("show", run_id, "--cat", "stdout", env=penv)
        assert (p.returncode, p.stdout) == (0, text), p.stderr


@pytest.mark.timeout(120)
def test_gc_spares_live_writers_and_running_runs(penv):
    store = Path(penv["PROV_STORE"])
    _finished(penv, "make the store")
    held = store / "tmp" / "obj-held"
    # both hold their files until killed below (not for a while: gc may come late)
    holder = subprocess.Popen([PYTHON, "-c", f"f = open({str(held)!r}, 'wb'); "
                               "f.write(b'x'); f.flush(); import signal; signal.pause()"])
    running = subprocess.Popen([PROV, "exec", "--", "sleep", "infinity"], env=penv,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not (held.exists() and (store / "runs").is_dir()
                   and any((store / "runs").iterdir())):
            assert time.monotonic() < deadline, "the writers did not start"
            time.sleep(0.1)
        run_dir = next((store / "runs").iterdir())
        young = store / "tmp" / "obj-young"
        young.write_bytes(b"half an object")
        p = prov("store", "gc", "--grace", "0", "--objects", "--json", env=penv)
        assert p.returncode == 0, p.stderr
        kept = {x["path"] for x in json.loads(p.stdout)["kept"]}
        assert held.exists() and run_dir.exists() and {str(held), str(run_dir)} <= kept
        assert not young.exists(), "an unheld temp file past the grace period stays"
        young.write_bytes(b"half an object")
        p = prov("store", "gc", env=penv)  # the default grace spares a fresh temp file
        assert p.returncode == 0 and young.exists(), p.stdout
    finally:
        for proc in (holder, running):
            proc.kill()
            proc.wait(timeout=30)


def test_gc_dry_run_removes_nothing(penv):
    store = Path(penv["PROV_STORE"])
    _finished(penv, "x")
    (store / "runs" / "0123456789abcdef").mkdir()
    os.utime(store / "runs" / "0123456789abcdef", (0, 0))
    p = prov("store", "gc", "--dry-run", env=penv)
    assert p.returncode == 0 and b"would remove" in p.stdout, p.stdout
    assert (store / "runs" / "0123456789abcdef").is_dir()
    p = prov("store", "gc", env=penv)
    assert p.returncode == 0 and not (store / "runs" / "0123456789abcdef").exists()
