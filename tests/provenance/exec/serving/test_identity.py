"""A server run's identity as a client's `server.*` (identity.py), the lines the client
got (lines.py) and the digest a receipt gets from the server's record chain (bind.py)."""

from __future__ import annotations

import json

from provenance.exec.serving.bind import digest_at
from provenance.exec.serving.identity import ABSENT, identity_of, merged_identity
from provenance.exec.serving.lines import FORMAT, read_server_file
from provenance.model import LeafKind, Manifest, classify


def test_one_server_is_its_identity_and_two_name_every_value():
    a = {"code": {"args": {"dtype": "float32", "model": "<input>"}}, "os": {"id": "x"}}
    b = {"code": {"args": {"dtype": "bfloat16", "model": "<input>"}}}
    assert merged_identity([a]) == a and merged_identity([a, a]) == a
    both = merged_identity([a, b])
    assert both["code"]["args"] == {"dtype": ["float32", "bfloat16"], "model": "<input>"}
    assert both["os"]["id"] == ["x", ABSENT]


def test_the_context_written_beside_the_identity_is_context_and_the_rest_identity():
    m = Manifest({"code": {"args": {"dtype": "float32", "port": "8000"}},
                  "host": {"name": "h"}, "run_id": {"x": 1}})
    tree = identity_of(m)
    assert tree == {"code": {"args": {"dtype": "float32"}}}  # port and host are context
    for key in ("server.run_id", "server.store", "server.url", "server.state",
                "server.manifest_digest", "server.exchanges.count"):
        assert classify(key) is LeafKind.CONTEXT, key
    assert classify("server.code.args.dtype") is LeafKind.IDENTITY
    assert classify("server.servers") is LeafKind.IDENTITY


def test_lines_of_another_format_or_server_are_skipped_and_the_rest_ordered(tmp_path):
    path = tmp_path / "abc.jsonl"
    good = {"format": FORMAT, "server_run_id": "abc", "server_store": "/s",
            "request": {"sha256": "1"}, "response": {"sha256": "2"}}
    path.write_text("\n".join([
        json.dumps({**good, "started_at": 2.0, "seq": 2}),
        "{not json",
        json.dumps({**good, "server_run_id": "other"}),
        json.dumps([1, 2]),
        json.dumps({**good, "started_at": 1.0, "seq": 1}),
    ]) + "\n")
    found = read_server_file(path)
    assert found.run_id == "abc" and found.store == "/s" and found.skipped == 3
    assert [ln["seq"] for ln in found.lines] == [1, 2]


def test_a_receipt_gets_the_digest_the_record_held_when_the_request_came():
    history = [(10.0, "sha256:snap"), (20.0, "sha256:live"), (30.0, "sha256:final")]
    assert digest_at(history, 25.0) == "sha256:live"
    assert digest_at(history, 5.0) == "sha256:snap"  # before the chain: its first
    assert digest_at(history, 31.0) == "sha256:final"
    assert digest_at(history, None) is None


def test_where_an_invariance_probe_reached_its_server_is_context():
    """Two probes of one configuration behind two ports compare on the server run they were
    bound to (`server.*`), not on its address."""
    from provenance.model.classes import LeafKind, classify

    assert classify("code.args.server_url") == LeafKind.CONTEXT
    assert classify("run.params.server_url") == LeafKind.CONTEXT
    assert classify("run.params.served_model") == LeafKind.IDENTITY
