"""The index: runs by id prefix, abandoned detection, reindex from objects, fsck findings."""

from __future__ import annotations

import os
import subprocess

import pytest

from provenance.model import Manifest
from provenance.model.errors import ProvError
from provenance.store import RunRecord, open_store
from provenance.store.records import new_run_id, now_iso, supervisor_identity


def started(store, run_id=None, supervisor=None, manifest=None):
    manifest = manifest or store.put_manifest(Manifest({"env": {"A": "1"}}))
    rec = {
        "run_id": run_id or new_run_id(),
        "state": "started",
        "command": ["true"],
        "started_at": now_iso(),
        "manifest": manifest,
        "manifest_digest": store.manifest_object(manifest).digest(),
        "supervisor": supervisor or supervisor_identity(),
    }
    return rec, store.create_run(RunRecord.from_doc(rec))


def finish(store, rec, previous, status=0):
    log = store.put_bytes(b"log\n", "log.stdout")
    final = {
        **rec,
        "state": "complete",
        "ended_at": now_iso(),
        "exit_status": status,
        "logs": {"stdout": {"digest": log, "size": 4}},
    }
    return store.finalize_run(RunRecord.from_doc(final), previous)


def dead_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def test_run_lifecycle_and_prefix_lookup(tmp_path):
    store = open_store(tmp_path / "s")
    rec, first = started(store, run_id="abc0000000000001")
    assert store.get_run("abc").state == "running"  # this process is the live supervisor
    final = finish(store, rec, first, status=3)
    info = store.get_run("abc0")
    assert info.state == "complete" and info.exit_status == 3 and info.record_digest == final
    assert info.record.previous == first
    started(store, run_id="abc0000000000002")
    with pytest.raises(ProvError, match="ambiguous"):
        store.get_run("abc")
    with pytest.raises(ProvError, match="no such run"):
        store.get_run("fff")
    assert [r.run_id for r in store.list_runs()][0] == "abc0000000000002"  # newest first


def test_dead_or_recycled_supervisor_means_abandoned(tmp_path):
    store = open_store(tmp_path / "s")
    me = supervisor_identity()
    started(store, run_id="aa" * 8, supervisor={**me, "pid": dead_pid()})
    started(store, run_id="bb" * 8, supervisor={**me, "start_ticks": me["start_ticks"] + 1})
    started(store, run_id="cc" * 8, supervisor={**me, "boot_id": "another-boot"})
    started(store, run_id="dd" * 8, supervisor=me)
    states = {r.run_id[:2]: r.state for r in store.list_runs()}
    assert states == {"aa": "abandoned", "bb": "abandoned", "cc": "abandoned", "dd": "running"}


def test_reindex_rebuilds_the_index_from_objects_alone(tmp_path):
    store = open_store(tmp_path / "s")
    for i in range(3):
        rec, first = started(store)
        if i < 2:
            finish(store, rec, first, status=i)
    store.put_comparison({"a": {"ref": "x"}, "b": {"ref": "y"}, "created_at": now_iso()})
    before = [(r.run_id, r.state, r.exit_status, r.record_digest) for r in store.list_runs()]
    store.close()
    for name in os.listdir(tmp_path / "s"):
        if name.startswith("index.sqlite"):
            os.unlink(tmp_path / "s" / name)
    store = open_store(tmp_path / "s")
    result = store.reindex()
    assert result.runs == 3 and result.comparisons == 1 and not result.corrupt
    after = [(r.run_id, r.state, r.exit_status, r.record_digest) for r in store.list_runs()]
    assert sorted(after) == sorted(before)
    assert len(store.list_comparisons()) == 1
    r = store.fsck()
    assert r.ok and not r.orphaned and not r.unindexed_runs and not r.stale_runs


def test_fsck_reports_missing_orphaned_and_unindexed(tmp_path):
    store = open_store(tmp_path / "s")
    rec, first = started(store)
    final = finish(store, rec, first)
    log = store.get_run(rec["run_id"]).record.logs["stdout"]["digest"]
    store.put_bytes(b"nobody refers to me")
    os.unlink(store.objects.path_for(log))
    # a run record whose index row was never written (prov killed in between)
    from provenance.store.records import RUN_KIND, encode

    lost = {**rec, "run_id": "ee" * 8, "kind": RUN_KIND, "schema_version": 1, "state": "started"}
    store.objects.put_bytes(encode(lost))
    r = store.fsck()
    assert not r.ok
    assert [d for d, _ in r.missing] == [log]
    assert len(r.orphaned) == 1
    assert r.unindexed_runs == ["ee" * 8]
    assert r.runs == {"complete": 1, "running": 1}
    assert final in {store.get_run(rec["run_id"]).record_digest}
