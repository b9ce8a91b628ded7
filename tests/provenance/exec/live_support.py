"""A tiny stdlib HTTP server run under `prov exec` for the live-facts and abandoned-run tests.

The server writes its port to a file, logs each request to stdout, and on GET /import
imports safetensors, a module the probe watches: the probe rewrites its file, so the run's
facts change while it serves."""

from __future__ import annotations

import subprocess
import time
import urllib.request
from pathlib import Path

from tests.exec_support import PROV, PYTHON, runs_json, show_json

SERVER = r'''
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/import":
            import safetensors  # noqa: F401 - watched by the probe: it saves (code.modules)
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"ok")
    def log_message(self, fmt, *args):
        print("request", self.path, flush=True)
for path in sys.argv[2:]:  # files the server reads as it starts (a model's config)
    open(path, "rb").read()
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print("serving on", s.server_address[1], flush=True)
print("a line on stderr", file=sys.stderr, flush=True)
import os
open(sys.argv[1] + ".tmp", "w").write("%d %d" % (s.server_address[1], os.getpid()))
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
s.serve_forever()
'''


class Server:
    def __init__(self, proc: subprocess.Popen, port: int, pid: int) -> None:
        self.proc, self.port, self.pid = proc, port, pid


def start_server(env: dict[str, str], tmp: Path, *reads: Path) -> Server:
    """`prov exec -- python server.py PORTFILE [FILE ...]` in its own session (prov, port,
    server pid); the server reads each FILE as it starts."""
    tmp.mkdir(parents=True, exist_ok=True)
    script = tmp / "server.py"
    script.write_text(SERVER)
    portfile = tmp / "port"
    proc = subprocess.Popen([PROV, "exec", "-q", "--", PYTHON, str(script), str(portfile),
                             *map(str, reads)],
                            env=env, cwd=tmp, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 120
    while not portfile.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"the server did not start ({proc.poll()})")
        time.sleep(0.1)
    port, pid = portfile.read_text().split()
    return Server(proc, int(port), int(pid))


def get(port: int, path: str) -> bytes:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
        return r.read()


def wait_for(what, env: dict[str, str], limit_s: float = 120) -> dict:
    """The newest run's `prov show --json` once `what(doc)` holds (polled)."""
    deadline = time.monotonic() + limit_s
    doc: dict = {}
    while time.monotonic() < deadline:
        runs = runs_json(env)
        if runs:
            doc = show_json(runs[0]["run_id"], env)
            if what(doc):
                return doc
        time.sleep(0.2)
    raise AssertionError(f"not seen within {limit_s} s; last: {str(doc)[:2000]}")


def stop(server: Server) -> None:
    """Kill what is left: the server (its own process group, under prov) and prov."""
    import contextlib
    import os
    import signal

    with contextlib.suppress(ProcessLookupError):
        os.killpg(server.pid, signal.SIGKILL)
    if server.proc.poll() is None:
        server.proc.kill()
    server.proc.wait(timeout=60)


def wait_logged(env: dict[str, str], run_id: str, needle: bytes, label: str = "stdout",
                limit_s: float = 120) -> None:
    """Once prov's tee has written `needle` into the run's `label` log in the store (the log's
    temp file, which a killed prov leaves for recovery): what the server printed is kept."""
    from provenance.exec.recover import partial_log_prefix

    pattern = partial_log_prefix(run_id, label) + "*"
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        for f in (Path(env["PROV_STORE"]) / "tmp").glob(pattern):
            try:
                if needle in f.read_bytes():
                    return
            except OSError:  # renamed into the store meanwhile
                continue
        time.sleep(0.1)
    raise AssertionError(f"{needle!r} not in the {label} log of {run_id} within {limit_s} s")
