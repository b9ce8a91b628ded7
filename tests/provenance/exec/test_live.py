# ruff: noqa: F811 - pytest fixtures imported from tests.exec_support
"""Live facts: a running command's probe facts are in its record while it runs
(exec/live.py), and the final record follows the live ones."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

from provenance.collectors import stamped
from provenance.store import open_store
from tests.exec_support import PROV, penv, prov, prov_cache, runs_json, show_json  # noqa: F401
from tests.provenance.exec.live_support import get, start_server, stop, wait_for


def _script_fact(doc: dict) -> bool:
    return bool(((doc.get("facts") or {}).get("code") or {}).get("script"))


def _has_safetensors(doc: dict) -> bool:
    """The probe saw the server import safetensors (its process's last stage)."""
    ended = ((doc.get("facts") or {}).get("probe") or {}).get("ended") or {}
    return any("import safetensors" in str(v) for v in ended.values())


def test_live_facts_while_serving_and_again_when_they_change(penv, tmp_path):
    server = start_server(penv, tmp_path)
    try:
        live = wait_for(_script_fact, penv)
        assert live["state"] == "running"  # live facts, no engine block: not "serving"
        assert live["live"]["update"] >= 1 and live["live"]["engines"] == []
        assert live["run_manifest"] and live["manifest_digest"] != ""
        store = open_store(penv["PROV_STORE"])
        info = store.get_run(live["run_id"])
        m = store.run_manifest(info.record)  # B's interface: the live manifest
        assert m.digest() == info.record.manifest_digest == live["manifest_digest"]
        assert m.get("code.script.sha256").startswith("sha256:")
        assert not _has_safetensors(live)
        assert get(server.port, "/import") == b"ok"  # the server imports safetensors: facts change
        changed = wait_for(_has_safetensors, penv)
        assert changed["live"]["update"] > live["live"]["update"]
        assert changed["run_manifest"] != live["run_manifest"]  # probe.* is context: same digest
        assert changed["previous"]  # each update points at the record it supersedes
        text = prov("show", live["run_id"], env=penv).stdout.decode()
        assert "live" in text and "facts update" in text
        server.proc.send_signal(signal.SIGTERM)  # forwarded to the server
        assert server.proc.wait(timeout=120) == 128 + signal.SIGTERM
    finally:
        stop(server)
    final = show_json(live["run_id"], penv)
    assert final["state"] == "failed" and final["signal"] == "SIGTERM"
    assert "live" not in final
    assert final["facts"]["code"]["script"] == live["facts"]["code"]["script"]
    assert final["previous"] != live["previous"]  # it follows the newest started record
    stdout = prov("show", live["run_id"], "--cat", "stdout", env=penv).stdout.decode()
    assert "serving on" in stdout and "request /import" in stdout


def test_reindex_keeps_the_newest_live_record(penv, tmp_path):
    server = start_server(penv, tmp_path)
    try:
        wait_for(_script_fact, penv)
        get(server.port, "/import")
        newest = wait_for(_has_safetensors, penv)
        assert prov("store", "reindex", env=penv).returncode == 0
        again = runs_json(penv)[0]
        assert again["record"] == newest["record"] and again["state"] == "running"
    finally:
        stop(server)


def test_a_running_servers_digests_are_written_while_it_serves(penv, tmp_path):
    """The run's digest cache is written after a live update that added digests: another run
    of the same files, or the recovery of this one if prov is killed, need not hash them."""
    from runners.demo.build import ensure
    from tests.runners.vllm_venv import CACHE

    weights = ensure(CACHE / "demo-model", steps=120) / "model.safetensors"
    # a file changed within the cache's racy window is hashed but never kept: wait until
    # the model (built by this test session, perhaps just now) has settled
    while not stamped.settled(stamped.stamp(str(weights)), time.time_ns()):
        time.sleep(0.1)
    env = dict(penv, PROV_CACHE_DIR=str(tmp_path / "cache"))  # this run's own digest table
    server = start_server(env, tmp_path / "srv", weights)
    try:
        get(server.port, "/import")  # the probe writes its file again: the read is in it
        live = wait_for(lambda d: "model.safetensors" in ((d.get("facts") or {})
                        .get("model") or {}).get("files", {}), env)
        table = Path(env["PROV_CACHE_DIR"]) / "file-digests.json"
        rows = json.loads(table.read_text())["rows"] if table.exists() else {}
        assert str(weights) in rows, sorted(rows)[:20]
        sha = live["facts"]["model"]["files"]["model.safetensors"]["sha256"]
        assert rows[str(weights)][1] == sha
        assert live["state"] == "running" and server.proc.poll() is None  # still serving
    finally:
        stop(server)
