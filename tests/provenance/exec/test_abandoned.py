# ruff: noqa: F811 - pytest fixtures imported from tests.exec_support
"""A run whose prov is killed (SIGKILL) keeps what it left: the first prov command that finds
it abandoned finishes its record (exec/recover.py) with the probe's facts and the logs up to
the kill; compare names the abandoned side. SIGTERM/SIGINT of prov and SIGKILL of the server
end the run as prov always has, facts and logs kept."""

from __future__ import annotations

import json
import os
import signal
import subprocess

import pytest

from provenance.store import open_store
from tests.exec_support import PROV, penv, prov, prov_cache, runs_json, show_json  # noqa: F401
from tests.provenance.exec.live_support import (
    get,
    start_server,
    stop,
    wait_for,
    wait_logged,
)


def _script_fact(doc: dict) -> bool:
    return bool(((doc.get("facts") or {}).get("code") or {}).get("script"))


def _kill_prov_keep_server_logs(penv, tmp_path) -> str:
    """A server under prov, one request logged, prov SIGKILLed; its run id."""
    server = start_server(penv, tmp_path)
    try:
        live = wait_for(_script_fact, penv)
        get(server.port, "/hello")
        wait_logged(penv, live["run_id"], b"request /hello")  # prov's tee has the line
        server.proc.send_signal(signal.SIGKILL)
        server.proc.wait(timeout=30)
    finally:
        stop(server)
    return live["run_id"]


def test_sigkill_of_prov_keeps_facts_and_logs(penv, tmp_path):
    run_id = _kill_prov_keep_server_logs(penv, tmp_path)
    store_root = penv["PROV_STORE"]
    assert os.listdir(os.path.join(store_root, "runs", run_id, "probe"))  # left unread
    doc = show_json(run_id, penv)  # the first command to find it abandoned finishes it
    assert doc["state"] == "abandoned"
    assert "abandoned: prov (pid" in doc["error"] and "exit_status" not in doc
    assert doc["facts"]["code"]["script"]["sha256"].startswith("sha256:")
    assert any("prov was killed" in w for w in doc["warnings"])
    out = prov("show", run_id, "--cat", "stdout", env=penv)
    assert out.returncode == 0, out.stderr
    assert b"serving on" in out.stdout and b"request /hello" in out.stdout
    err = prov("show", run_id, "--cat", "stderr", env=penv).stdout
    assert b"a line on stderr" in err
    # nothing left behind, and the record is final: a second look finds the same one
    assert not os.path.exists(os.path.join(store_root, "runs", run_id))
    assert not [f for f in os.listdir(os.path.join(store_root, "tmp")) if f.startswith("log-")]
    assert show_json(run_id, penv)["record"] == doc["record"]
    assert runs_json(penv)[0]["state"] == "abandoned"
    text = prov("show", run_id, env=penv).stdout.decode()
    assert "abandoned" in text and "script" in text
    store = open_store(store_root)
    m = store.run_manifest(store.get_run(run_id).record)
    assert m.digest() == doc["manifest_digest"]
    assert prov("store", "reindex", env=penv).returncode == 0
    assert runs_json(penv)[0]["record"] == doc["record"]


def test_two_commands_finding_it_abandoned_write_one_record(penv, tmp_path):
    run_id = _kill_prov_keep_server_logs(penv, tmp_path)
    procs = [subprocess.Popen([PROV, "show", run_id, "--json"], env=penv,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for _ in range(3)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
    assert not any(o[1] for o in outs), [o[1] for o in outs]
    final = show_json(run_id, penv)
    assert final["state"] == "abandoned"
    # each waited for the one that finished it and shows that record
    assert {json.loads(o[0])["record"] for o in outs} == {final["record"]}
    store = open_store(penv["PROV_STORE"])
    finals = [d for d in _run_records(store, run_id) if d["state"] == "abandoned"]
    assert len(finals) == 1


def _run_records(store, run_id: str) -> list[dict]:
    rows = store.db.execute("SELECT digest FROM objects WHERE kind = 'run'").fetchall()
    docs = [store.get_json(r["digest"]) for r in rows]
    return [d for d in docs if d.get("run_id") == run_id]


def test_compare_names_the_abandoned_side(penv, tmp_path):
    abandoned = _kill_prov_keep_server_logs(penv, tmp_path / "a")
    server = start_server(penv, tmp_path / "b")
    try:
        wait_for(lambda d: d["run_id"] != abandoned and _script_fact(d), penv)
        server.proc.send_signal(signal.SIGTERM)
        server.proc.wait(timeout=120)
    finally:
        stop(server)
    finished = runs_json(penv)[0]["run_id"]
    p = prov("compare", abandoned, finished, env=penv)
    text = (p.stdout + p.stderr).decode()
    assert f"note: A (run {abandoned[:12]}) is abandoned" in text
    assert "note: B" not in text
    j = prov("compare", abandoned, finished, "--json", env=penv)
    assert json.loads(j.stdout)["unfinished"] == {"a": "abandoned"}


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_or_sigint_of_prov_keeps_facts_and_logs(penv, tmp_path, sig):
    server = start_server(penv, tmp_path)
    try:
        live = wait_for(_script_fact, penv)
        get(server.port, "/hello")
        wait_logged(penv, live["run_id"], b"request /hello")
        server.proc.send_signal(sig)  # forwarded to the server, which ends of it
        server.proc.wait(timeout=120)
    finally:
        stop(server)
    doc = show_json(live["run_id"], penv)
    assert doc["state"] == "failed" and doc["facts"]["code"]["script"]
    assert b"request /hello" in prov("show", live["run_id"], "--cat", "stdout", env=penv).stdout


def test_sigkill_of_the_server_keeps_facts_and_logs(penv, tmp_path):
    server = start_server(penv, tmp_path)
    try:
        live = wait_for(_script_fact, penv)
        get(server.port, "/hello")
        wait_logged(penv, live["run_id"], b"request /hello")
        os.kill(server.pid, signal.SIGKILL)
        assert server.proc.wait(timeout=120) == 128 + signal.SIGKILL
    finally:
        stop(server)
    doc = show_json(live["run_id"], penv)
    assert doc["state"] == "failed" and doc["signal"] == "SIGKILL"
    assert doc["facts"]["code"]["script"]["sha256"].startswith("sha256:")
    assert b"request /hello" in prov("show", live["run_id"], "--cat", "stdout", env=penv).stdout
