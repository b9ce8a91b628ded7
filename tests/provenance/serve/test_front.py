"""`prov serve`: a recording front for a server prov does not run (a plain stdlib server
here, shaped like vLLM's and llama.cpp's). The front is a server run: what the upstream says
of itself is in its facts, live while it serves; a client under plain `prov exec` talking to
the front is bound to it; a change behind the front refuses the clients' comparison."""

# ruff: noqa: F811 - pytest fixtures imported from tests.exec_support
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.exec_support import PROV, penv, prov, prov_cache, show_json  # noqa: F401
from tests.provenance.exec.probe.test_probe_server import free_port

UPSTREAM = Path(__file__).with_name("plain_upstream.py")
SECRET = "sk-client-secret-7f3a9c"
CLIENT = """
import json, sys, urllib.request
port, stream = sys.argv[1], sys.argv[2] == "stream"
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions",
    data=json.dumps({"model": "tiny", "prompt": "a", "max_tokens": 3, "logprobs": 1,
                     "stream": stream}).encode(),
    headers={"Content-Type": "application/json", "Authorization": "Bearer SECRET"})
print(opener.open(req, timeout=30).read().decode())
""".replace("SECRET", SECRET)


def _get(url: str) -> bytes:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=5) as r:
        return r.read()


def _wait(url: str, proc: subprocess.Popen) -> None:
    for _ in range(300):
        if proc.poll() is not None:
            raise AssertionError(f"ended with {proc.returncode}: {proc.stdout.read()[-2000:]}")
        try:
            _get(url)
            return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"{url} never answered")


class Front:
    """A plain upstream reporting `dtype`, and `prov serve` in front of it."""

    def __init__(self, env: dict[str, str], cwd: Path, dtype: str, port: int) -> None:
        self.up_port, self.port = free_port(), port
        self.upstream = subprocess.Popen([sys.executable, str(UPSTREAM), str(self.up_port),
                                          dtype], stdout=subprocess.DEVNULL)
        self.front = subprocess.Popen(
            [PROV, "serve", "--upstream", f"http://127.0.0.1:{self.up_port}", "--port",
             str(self.port), "--name", f"front-{dtype}"], env=env, cwd=cwd,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True)
        _wait(f"http://127.0.0.1:{self.port}/v1/models", self.front)

    def stop(self) -> int:
        self.front.send_signal(signal.SIGTERM)
        status = self.front.wait(timeout=60)
        self.upstream.kill()
        self.upstream.wait()
        return status


def _client(env: dict[str, str], cwd: Path, port: int, mode: str) -> str:
    p = prov("exec", "--json", "--", sys.executable, "-c", CLIENT, str(port), mode, env=env,
             cwd=cwd)
    assert p.returncode == 0, p.stderr.decode()[-2000:]
    return json.loads(p.stdout)["run_id"]


def _live_upstream(run: str, env: dict[str, str]) -> dict:
    """The front's live `upstream` facts, once its supervisor has taken them in."""
    for _ in range(600):
        facts = show_json(run, env).get("facts") or {}
        if "upstream" in facts:
            return facts["upstream"]
        time.sleep(0.2)
    raise AssertionError("no live upstream facts")


def _identity(port: int) -> dict:
    return json.loads(_get(f"http://127.0.0.1:{port}/prov/v1/identity"))


@pytest.fixture
def front(penv, tmp_path):
    fronts: list[Front] = []

    def start(dtype: str, port: int = 0) -> Front:
        fronts.append(Front(penv, tmp_path, dtype, port or free_port()))
        return fronts[-1]

    yield start
    for f in fronts:
        if f.front.poll() is None:
            f.stop()


def test_the_front_is_a_server_run_and_its_clients_are_bound(front, penv, tmp_path):
    f = front("float32")
    run = _identity(f.port)["server_run_id"]  # the front answers prov's identity route
    upstream = _live_upstream(run, penv)  # while it serves: the upstream's self-description
    assert upstream["version"] == {"version": "0.0-plain"}
    assert upstream["config"]["model_config"]["dtype"] == "float32"
    assert upstream["config"]["api_key"] != "sk-hidden-1"  # a secret-named field is hidden
    assert upstream["endpoints"]["props"] == 200 and upstream["endpoints"]["server_info"] == 404
    assert upstream["models"]["tiny"]["max_model_len"] == 256
    plain, streamed = (_client(penv, tmp_path, f.port, m) for m in ("plain", "stream"))
    assert f.stop() == 0
    final = show_json(run, penv)
    assert final["state"] == "complete"
    for client in (plain, streamed):
        facts = show_json(client, penv)["facts"]
        # the client's identity holds the front's, the upstream's words included
        assert facts["server"]["upstream"]["config"]["model_config"]["dtype"] == "float32"
    store = Path(penv["PROV_STORE"])
    assert not [p for p in store.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]


def test_another_dtype_behind_the_front_refuses_the_clients(front, penv, tmp_path):
    runs, port = [], free_port()  # the clients' command lines name one port
    for dtype in ("float32", "bfloat16"):
        f = front(dtype, port)
        runs.append(_client(penv, tmp_path, f.port, "plain"))
        f.stop()
    p = prov("compare", *runs, "--json", env=penv)
    assert p.returncode == 3
    refused = json.loads(p.stdout)["refused"]
    assert "server.upstream.config.model_config.dtype" in refused
    p = prov("compare", *runs, "--vary", "dtype", env=penv)
    assert p.returncode == 0, (p.stdout + p.stderr).decode()[-3000:]


def test_bad_upstream_and_port_are_one_line_errors(penv):
    for args in (("--upstream", "ftp://x"), ("--upstream", "http://127.0.0.1:1",
                                             "--port", "70000")):
        p = prov("serve", *args, env=penv)
        assert p.returncode == 2
        assert p.stderr.decode().strip().splitlines()[-1].startswith("prov: error:")
