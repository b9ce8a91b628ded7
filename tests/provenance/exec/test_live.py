# ruff: noqa: F811 - pytest fixtures imported from tests.exec_support
"""Live facts: a running command's probe facts are in its record while it runs
(exec/live.py), and the final record follows the live ones."""

from __future__ import annotations

import signal

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
