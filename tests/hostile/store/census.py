"""Census of the store-fault cases, runnable against any checkout:

    PYTHONPATH=<tree> python -m tests.hostile.store.census > census.json

Each case is classified as `ok` (the behaviour issue #19 asks for), `refused` (one line
`prov: error:`, a documented exit code, but not the asked behaviour), `internal` (exit 70
or a traceback), `hang` (past its timeout) or `wrong` (anything else: lost output, lost
status, a reader that fails). Needs root for the tmpfs mounts.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.exec_support import PROV, PYTHON
from tests.hostile.faults import read_only_copy, tmpfs

DISK = ("import sys\nfor i in range(8000): sys.stdout.write('x' * 1023 + '\\n')\n"
        "sys.stderr.write('end\\n'); sys.exit(7)\n")


def run(args, env, timeout=120):
    try:
        return subprocess.run([PROV, *args], env=env, capture_output=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return None


def classify(p, good) -> str:
    if p is None:
        return "hang"
    err = p.stderr.decode("utf-8", "replace")
    if p.returncode == 70 or "Traceback" in err:
        return "internal"
    if good(p):
        return "ok"
    lines = [x for x in err.splitlines() if x.strip()]
    if p.returncode in (1, 2, 3, 4) and len(lines) == 1 and lines[0].startswith("prov: error:"):
        return "refused"
    return "wrong"


def _names_reindex(p) -> bool:
    """What a reader of a damaged index can do: one line naming the repair, exit 2."""
    lines = [x for x in p.stderr.decode("utf-8", "replace").splitlines() if x.strip()]
    return p.returncode == 2 and len(lines) == 1 and "prov store reindex" in lines[0]


def store_with_run(base: Path, env) -> Path:
    env = {**env, "PROV_STORE": str(base / "store")}
    assert run(["exec", "--", "echo", "hi"], env).returncode == 0
    return base / "store"


def corrupt_cases(base: Path, env) -> dict[str, str]:
    out = {}
    damages = {
        "truncated": lambda p: os.truncate(p, p.stat().st_size // 2),
        "garbage": lambda p: p.write_bytes(os.urandom(8192)),
    }
    for name, damage in damages.items():
        store = store_with_run(base / f"c-{name}", env)
        e = {**env, "PROV_STORE": str(store)}
        run(["store", "reindex"], e)  # leaves the index checkpointed in the main file
        for extra in ("index.sqlite-wal", "index.sqlite-shm"):
            (store / extra).unlink(missing_ok=True)
        damage(store / "index.sqlite")
        for args in (["runs"], ["store", "fsck"]):
            out[f"corrupt/{name}/{' '.join(args)}"] = classify(run(args, e), _names_reindex)
        out[f"corrupt/{name}/reindex recovers"] = classify(
            run(["store", "reindex"], e),
            lambda p, e=e: p.returncode == 0 and run(["runs", "--json"], e).returncode == 0)
    return out


def read_only_cases(base: Path, env) -> dict[str, str]:
    out = {}
    store = store_with_run(base / "ro-src", env)
    with read_only_copy(store, base / "ro") as ro:
        e = {**env, "PROV_STORE": str(ro)}
        for args in (["runs"], ["store", "fsck"]):
            out[f"read-only/{' '.join(args)}"] = classify(run(args, e),
                                                          lambda p: p.returncode == 0)
        for args in (["exec", "--", "true"], ["store", "reindex"]):
            out[f"read-only/{' '.join(args)}"] = classify(
                run(args, e), lambda p: p.returncode == 2 and b"read-only" in p.stderr)
    return out


def disk_full_cases(base: Path, env) -> dict[str, str]:
    with tmpfs(base / "small", "2m") as small:
        e = {**env, "PROV_STORE": str(small / "store")}
        p = run(["exec", "--", PYTHON, "-c", DISK], e)

        def good(p) -> bool:
            return p.returncode == 7 and len(p.stdout) == 8000 * 1024 and b"end\n" in p.stderr
        return {"disk-full/mid-stream keeps output and status": classify(p, good)}


def kill_cases(base: Path, env) -> dict[str, str]:
    import random
    import signal
    import time

    e = {**env, "PROV_STORE": str(base / "k" / "store")}
    rng = random.Random(19)
    slow = ("import sys, time\nfor i in range(3000):\n"
            "    sys.stdout.write('y' * 1023 + '\\n'); sys.stdout.flush(); time.sleep(0.0003)\n")
    for _ in range(10):
        proc = subprocess.Popen([PROV, "exec", "--", PYTHON, "-c", slow], env=e,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.05, 1.5))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    time.sleep(0.5)
    store = base / "k" / "store"
    gc = run(["store", "gc", "--grace", "0", "--objects"], e)
    left = [p for sub in ("tmp", "runs") if (store / sub).is_dir() for p in (store / sub).iterdir()]
    return {"kill-9/gc leaves nothing": classify(gc, lambda p: p.returncode == 0 and not left)}


def main() -> None:
    env = {**os.environ, "PROV_CACHE_DIR": str(Path.home() / ".cache/prov-tests/census"),
           "PROV_NO_PYPROJECT": "1"}
    base = Path(tempfile.mkdtemp(prefix="prov-census-"))
    cases: dict[str, str] = {}
    try:
        for fn in (kill_cases, disk_full_cases, read_only_cases, corrupt_cases):
            try:
                cases.update(fn(base, env))
            except BaseException as exc:  # noqa: BLE001 - pytest.skip from a refused mount
                cases[fn.__name__] = f"not run: {exc}"
    finally:
        shutil.rmtree(base, ignore_errors=True)
    tally: dict[str, int] = {}
    for verdict in cases.values():
        tally[verdict] = tally.get(verdict, 0) + 1
    json.dump({"cases": cases, "tally": tally, "tried": len(cases)}, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
