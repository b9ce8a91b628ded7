"""Clients bound to the server run they talked to, over a tiny FastAPI server (the vllm
venv's fastapi and uvicorn) under `prov exec`: no option on one machine, `--server URL`
across; the server's identity under `server.*`, refused and passed by the presets as the
client's own keys; exchanges recorded with receipts, no secret stored; two servers said."""

# ruff: noqa: F811 - pytest fixtures imported from tests.exec_support
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.exec_support import prov, prov_cache, show_json  # noqa: F401 - fixtures
from tests.provenance.exec.serving.serving_support import (
    client,
    compare,
    free_port,
    loopback,
    served,
    store_bytes,
)
from tests.runners.vllm_venv import VENV, vllm_python

TINY = Path(__file__).with_name("tiny_server.py")
VPY = VENV / "bin" / "python"
SECRET = "sk-prov-test-secret-0042"
@pytest.fixture(scope="module", autouse=True)
def _vllm_venv() -> None:
    """The server runs on the vllm venv's fastapi and uvicorn: built here if missing (a
    skip would make these tests pass unseen on a fresh machine)."""
    vllm_python()


@pytest.fixture(scope="module")
def senv(tmp_path_factory, prov_cache) -> dict[str, str]:
    root = tmp_path_factory.mktemp("serving")
    env = dict(os.environ)
    env.update({"PROV_STORE": str(root / "store"), "PROV_CACHE_DIR": str(prov_cache),
                "COLUMNS": "250", "PROV_NO_PYPROJECT": "1"})
    return env


@pytest.fixture(scope="module")
def cwd(senv) -> Path:
    return Path(senv["PROV_STORE"]).parent


def _tiny(senv, cwd, port, tokens, name, **extra):
    env = {**senv, **extra}
    return served(env, cwd, [str(VPY), str(TINY), "--port", str(port), tokens], port, name)


def _curl(url: str, *extra: str, stream: bool = False) -> list[str]:
    body = json.dumps({"model": "m", "prompt": "hi", "max_tokens": 3, "temperature": 0,
                       "logprobs": 2, "stream": stream})
    return [shutil.which("curl") or "curl", "-sf", "--noproxy", "*", "-H",
            "content-type: application/json", *extra, "-d", body, f"{url}/v1/completions"]


CONCURRENT = """
import json, sys, threading, urllib.request
url, n = sys.argv[1], int(sys.argv[2])
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
def one(i):
    body = json.dumps({"model": "m", "prompt": "p%d" % i, "max_tokens": 3}).encode()
    req = urllib.request.Request(url + "/v1/completions", data=body,
                                 headers={"Content-Type": "application/json"})
    assert json.loads(opener.open(req, timeout=60).read())["choices"]
threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
[t.start() for t in threads]
[t.join() for t in threads]
"""


@pytest.fixture(scope="module")
def first(senv, cwd, port):
    """Server one (tokens the,cat,sat) and what its clients recorded while it served."""
    with _tiny(senv, cwd, port, "the,cat,sat", "tiny-a") as srv:
        url = srv.url
        runs = {
            "secret": client(senv, cwd, *_curl(url, "-H", f"Authorization: Bearer {SECRET}")),
            "a": client(senv, cwd, *_curl(url)),
            "b": client(senv, cwd, *_curl(url)),
            "stream": client(senv, cwd, *_curl(url, stream=True)),
            "concurrent": client(senv, cwd, str(VPY), "-c", CONCURRENT, url, "16"),
            "remote": client(senv, cwd, "true", options=("--server", url)),
        }
        identity = json.loads(loopback(f"{url}/prov/v1/identity"))
        live = show_json(srv.run_id, senv)
    return srv, runs, identity, live


@pytest.fixture(scope="module")
def port() -> int:
    """One port for the first server and its restart: the clients' URLs are one."""
    return free_port()


def test_a_client_is_bound_to_the_server_run_it_talked_to(first, senv):
    srv, runs, _, _ = first
    server = runs["a"]["facts"]["server"]
    assert server["run_id"] == srv.run_id and server["servers"] == 1
    assert server["url"] == srv.url and server["state"] == "running"  # no engine: not serving
    assert server["exchanges"] == {"count": 1, "file": "server/exchanges.json"}
    # the server's identity keys, as its live manifest holds them
    assert server["code"]["args"]["0"] == "the,cat,sat"
    assert "python" in server and "run_id" not in server.get("code", {})
    assert "server/exchanges.json" in runs["a"]["run_dir"]
    shown = prov("show", runs["a"]["run_id"], env=senv).stdout.decode()
    assert f"server  run {srv.run_id} (running) at {srv.url}: 1 exchange(s)" in shown, shown


def test_each_exchange_has_digests_tokens_and_a_receipt_and_no_secret(first, senv):
    srv, runs, _, _ = first
    doc = json.loads(_run_file(senv, runs["secret"], "server/exchanges.json"))
    [ex] = doc["exchanges"]
    assert ex["path"] == "/v1/completions" and ex["status"] == 200
    assert ex["client"]["run_id"] == runs["secret"]["run_id"]
    assert ex["request"]["max_tokens"] == 3 and len(ex["request"]["sha256"]) == 64
    assert ex["response"]["choices"][0]["tokens"] == ["the", "cat", "sat"]
    receipt = ex["receipt"]
    assert receipt["server_run_id"] == srv.run_id
    assert receipt["request_sha256"] == ex["request"]["sha256"]
    assert receipt["server_manifest_digest"].startswith("sha256:")
    assert "authorization" not in json.dumps(ex).lower()
    assert SECRET.encode() not in store_bytes(Path(senv["PROV_STORE"]))


def test_a_streamed_response_is_recorded_by_its_events(first, senv):
    _, runs, _, _ = first
    [ex] = json.loads(_run_file(senv, runs["stream"], "server/exchanges.json"))["exchanges"]
    assert ex["request"]["stream"] is True and ex["response"]["events"] == 4
    assert ex["content_type"].startswith("text/event-stream")
    choice = ex["response"]["choices"][0]
    assert choice["tokens"] == ["the", "cat", "sat"] and choice["token_ids"] == [0, 1, 2]


def test_two_clients_of_one_server_compare_clean_with_identical_exchanges(first, senv):
    _, runs, _, _ = first
    rc, doc = compare(senv, runs["a"], runs["b"])
    assert rc == 0, doc["refused"]
    assert doc["exchanges"]["matched"] == doc["exchanges"]["identical"] == 1
    assert doc["exchanges"]["top1"] == {"positions": 3, "agree": 3, "ratio": 1.0}


def test_sixteen_concurrent_requests_are_all_recorded(first, senv):
    _, runs, _, _ = first
    run = runs["concurrent"]
    assert run["facts"]["server"]["exchanges"]["count"] == 16
    doc = json.loads(_run_file(senv, run, "server/exchanges.json"))
    assert len({e["request"]["sha256"] for e in doc["exchanges"]}) == 16
    assert {e["client"]["run_id"] for e in doc["exchanges"]} == {run["run_id"]}


def test_the_identity_route_and_server_url_bind_across_machines(first, senv):
    srv, runs, identity, live = first
    assert identity["server_run_id"] == srv.run_id
    assert identity["manifest_digest"].startswith("sha256:")
    assert identity["manifest"]["code"]["args"]["0"] == "the,cat,sat"
    server = runs["remote"]["facts"]["server"]
    assert server["run_id"] == srv.run_id and server["exchanges"]["count"] == 0
    assert server["code"]["args"]["0"] == "the,cat,sat"
    assert live["live"]["update"] >= 1  # what the clients were bound to: the live record


def test_the_server_run_keeps_every_exchange_it_served(first, senv):
    srv, runs, _, _ = first
    record = show_json(srv.run_id, senv)  # final: the server was stopped
    [name] = [n for n in record["run_dir"] if n.startswith("exchanges/")]
    lines = _run_file(senv, record, name).decode().splitlines()
    posts = [json.loads(x) for x in lines if '"POST"' in x]
    assert len(posts) == 1 + 2 + 1 + 16  # secret, a, b, stream, concurrent
    assert {p["client"].get("run_id") for p in posts} == {
        r["run_id"] for k, r in runs.items() if k != "remote"}


def test_the_server_side_identity_alone_binds_a_client_whose_store_it_cannot_read(first, tmp_path):
    from provenance.exec.serving.bind import _from_remote
    from provenance.store import open_store

    srv, _, identity, _ = first
    doc = {**identity, "store": str(tmp_path / "elsewhere"), "url": srv.url}
    bound = _from_remote(doc, open_store(tmp_path / "own"), warnings := [])
    assert bound.run_id == srv.run_id and warnings == []
    assert bound.identity["code"]["args"]["0"] == "the,cat,sat"


def test_a_restarted_server_with_another_setting_refuses_naming_server_keys(first, senv, cwd,
                                                                           port):
    _, runs, _, _ = first
    with _tiny(senv, cwd, port, "the,cat,ran", "tiny-b") as srv:
        other = client(senv, cwd, *_curl(srv.url))
    rc, doc = compare(senv, runs["a"], other)
    assert rc == 3 and set(doc["refused"]) == {"server.code.args.0"}, doc["refused"]
    rc, doc = compare(senv, runs["a"], other, "command")
    assert rc == 0, doc["refused"]
    diff = doc["exchanges"]["differences"][0]["first_difference"]
    assert diff == {"choice": 0, "position": 2, "a": "sat (id 2)", "b": "ran (id 2)"}
    assert doc["exchanges"]["top1"]["agree"] == 2


def test_a_client_of_two_servers_says_so_and_names_both_values(senv, cwd):
    pa, pb = free_port(), free_port()
    curl = _curl("http://x")[:-1]
    script = ("import subprocess, sys\nfor u in sys.argv[1:]:\n"
              f"    subprocess.run({curl!r} + [u + '/v1/completions'], check=True)\n")
    with _tiny(senv, cwd, pa, "one", "tiny-c") as a, \
            _tiny(senv, cwd, pb, "two", "tiny-d") as b:
        run = client(senv, cwd, str(VPY), "-c", script, a.url, b.url)
    server = run["facts"]["server"]
    assert server["servers"] == 2 and sorted(server["run_id"]) == sorted([a.run_id, b.run_id])
    assert sorted(server["code"]["args"]["0"]) == ["one", "two"]
    assert any("talked to 2 server runs" in w for w in run["warnings"]), run["warnings"]


def test_a_failing_recorder_never_breaks_a_response(senv, cwd):
    port = free_port()
    with _tiny(senv, cwd, port, "ok", "tiny-fault", PROV_PROBE_FAULT="asgi send") as srv:
        body = json.loads(loopback(f"{srv.url}/v1/completions", {"prompt": "x"}))
        assert body["choices"][0]["text"] == "ok"


def _run_file(env: dict[str, str], run: dict, name: str) -> bytes:
    from provenance.store import open_store

    return open_store(env["PROV_STORE"]).get_bytes(run["run_dir"][name]["digest"])
