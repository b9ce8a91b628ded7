"""RunRecord: validated at the store's edge, written back field for field."""

from __future__ import annotations

import pytest

from provenance.model import Manifest
from provenance.model.errors import EXIT_USAGE, ProvError
from provenance.store import RecordError, RunRecord, open_store
from provenance.store.records import encode, new_run_id, now_iso

DOC = {
    "kind": "prov.run", "schema_version": 1, "run_id": "0123456789abcdef", "state": "complete",
    "command": ["python", "-c", "pass"], "started_at": "2026-12-01T09:00:00.000000Z",
    "manifest": "sha256:" + "a" * 64, "manifest_digest": "sha256:" + "b" * 64,
    "tags": {}, "params": {"dtype": "bf16"}, "exit_status": 0, "duration_s": 0.5,
    "logs": {"stdout": {"digest": "sha256:" + "c" * 64, "size": 3}},
    "loaded_libraries": [{"name": "libc.so.6", "path": "/lib/libc.so.6", "sha256": "x"}],
    "a_field_from_a_newer_prov": {"kept": True},
}


def test_a_record_reads_as_attributes_and_writes_back_unchanged():
    rec = RunRecord.from_doc(DOC)
    assert rec.command == ("python", "-c", "pass") and rec.params == {"dtype": "bf16"}
    assert rec.log_digest("stdout") == "sha256:" + "c" * 64 and rec.log_digest("stderr") is None
    assert rec.run_manifest_object == rec.manifest  # no run manifest stored yet
    assert encode(rec.to_doc()) == encode(DOC)


@pytest.mark.parametrize("bad, message", [
    ({"exit_status": "0"}, "exit_status"),
    ({"command": "python -c pass"}, "command"),
    ({"state": "finished"}, "state"),
    ({"kind": "prov.comparison"}, "kind"),
    ({"schema_version": 99}, "newer"),
    ({"logs": []}, "logs"),
])
def test_a_malformed_record_is_refused_with_one_line(bad, message):
    with pytest.raises(RecordError, match=message) as err:
        RunRecord.from_doc({**DOC, **bad})
    assert isinstance(err.value, ProvError) and err.value.exit_code == EXIT_USAGE


def test_a_missing_field_is_named():
    doc = {k: v for k, v in DOC.items() if k != "manifest_digest"}
    with pytest.raises(RecordError, match="missing manifest_digest"):
        RunRecord.from_doc(doc)


def test_the_store_validates_what_it_reads(tmp_path, monkeypatch):
    # a started record with no live supervisor reads as abandoned; the CLI, once imported
    # in this process, has the store finish such runs as it reads them: not here
    from provenance.store import store as store_module

    monkeypatch.setattr(store_module, "RECOVER_ABANDONED", None)
    store = open_store(tmp_path / "s")
    manifest = store.put_manifest(Manifest({"env": {"A": "1"}}))
    rec = RunRecord(run_id=new_run_id(), state="started", command=("true",),
                    started_at=now_iso(), manifest=manifest,
                    manifest_digest=store.manifest_object(manifest).digest())
    digest = store.create_run(rec)
    got = store.get_run(rec.run_id).record
    assert got.replace(extra={}) == rec.replace(extra={}) and store.get_record(digest) == got
    bad = store.put_bytes(encode({**DOC, "exit_status": "zero"}), "run")
    with pytest.raises(RecordError, match=f"run record {bad}: field 'exit_status'"):
        store.get_record(bad)


def test_live_and_abandoned_records_validate_and_rank():
    """A started record with live facts (exec/live.py) and an abandoned final record
    (exec/recover.py) are records like the others; the index calls the first serving once
    its live facts hold an engine, and ranks a later live update above an earlier one."""
    from provenance.store.records import effective_state, index_state, record_rank

    live = {**DOC, "state": "started", "live": {"update": 3, "updated_at": now_iso(),
                                                  "engines": ["vllm"]}}
    live.pop("exit_status")
    rec = RunRecord.from_doc(live)
    assert rec.live["update"] == 3 and encode(rec.to_doc()) == encode(live)
    assert index_state(live) == "serving"
    assert index_state({**live, "live": {"update": 1, "engines": []}}) == "started"
    assert record_rank(live) > record_rank({**live, "live": {"update": 2}})
    abandoned = {**DOC, "state": "abandoned", "error": "abandoned: prov (pid 1) ended"}
    assert RunRecord.from_doc(abandoned).state == "abandoned"
    assert record_rank(abandoned) > record_rank(live)
    with pytest.raises(RecordError):
        RunRecord.from_doc({**live, "live": ["not", "a", "table"]})
    assert effective_state("serving", None, None, None, None) == "abandoned"  # no supervisor
    assert effective_state("abandoned", None, None, None, None) == "abandoned"
