"""Objects: content addressing, verification on read, streaming, prefixes, store location."""

from __future__ import annotations

import hashlib
import os
import subprocess

import pytest

from provenance.model import Manifest
from provenance.model.errors import ProvError
from provenance.store import CorruptObject, open_store
from provenance.store.store import default_store_path


def test_put_get_is_content_addressed_and_immutable(tmp_path):
    store = open_store(tmp_path / "s")
    d = store.put_bytes(b"hello\n", "blob")
    assert d == "sha256:" + hashlib.sha256(b"hello\n").hexdigest()
    path = tmp_path / "s" / "objects" / "sha256" / d[7:9] / d[9:]
    assert path.read_bytes() == b"hello\n"
    assert not os.access(path, os.W_OK) or os.geteuid() == 0  # written read-only
    assert oct(path.stat().st_mode & 0o777) == "0o444"
    assert store.put_bytes(b"hello\n") == d  # idempotent
    assert store.get_bytes(d) == b"hello\n"
    assert store.get_bytes(d[:12]) == b"hello\n"  # a unique prefix is enough
    assert not list((tmp_path / "s" / "tmp").iterdir())  # no temp file left behind
    # the digest is what coreutils computes for the file's bytes
    out = subprocess.run(["sha256sum", str(path)], capture_output=True, text=True, check=True)
    assert out.stdout.split()[0] == d[7:]


def test_corruption_is_detected_on_read_and_by_fsck(tmp_path):
    store = open_store(tmp_path / "s")
    d = store.put_bytes(b"precious")
    path = store.objects.path_for(d)
    os.chmod(path, 0o644)
    path.write_bytes(b"tampered")
    with pytest.raises(CorruptObject):
        store.get_bytes(d)
    assert not store.objects.verify(d)
    r = store.fsck()
    assert not r.ok and r.corrupt == [d]


def test_streaming_writer_and_abort(tmp_path):
    store = open_store(tmp_path / "s")
    store._ensure_layout()
    with store.objects.writer() as w:
        for _ in range(5):
            w.write(b"x" * (1 << 20))
    assert w.size == 5 << 20
    assert w.digest == "sha256:" + hashlib.sha256(b"x" * (5 << 20)).hexdigest()
    assert b"".join(store.objects.open_verified(w.digest)) == b"x" * (5 << 20)
    with pytest.raises(RuntimeError), store.objects.writer() as w2:
        w2.write(b"partial")
        raise RuntimeError("writer died")
    assert not list(store.objects.tmp.iterdir())


def test_missing_and_ambiguous_prefixes_are_one_line_errors(tmp_path):
    store = open_store(tmp_path / "s")
    with pytest.raises(ProvError, match="missing"):
        store.get_bytes("sha256:" + "0" * 64)
    with pytest.raises(ProvError, match="not a sha256"):
        store.get_bytes("zz")
    with pytest.raises(ProvError, match="no such object"):
        store.get_bytes("abcdef")


def test_manifest_round_trip_and_lookup_by_either_digest(tmp_path):
    store = open_store(tmp_path / "s")
    m = Manifest({"env": {"OMP_NUM_THREADS": "4"}, "host": {"hostname": "a"}})
    obj = store.put_manifest(m)
    assert store.load_manifest(obj[:14]).digest() == m.digest()
    assert store.load_manifest(m.digest()[:16]).digest() == m.digest()  # identity digest
    # same identity, other context: another object, same identity lookup still works
    m2 = Manifest({"env": {"OMP_NUM_THREADS": "4"}, "host": {"hostname": "b"}})
    obj2 = store.put_manifest(m2)
    assert obj2 != obj
    assert store.load_manifest(m.digest()).digest() == m.digest()


def test_store_location(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    (repo / "a" / "b").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    monkeypatch.delenv("PROV_STORE", raising=False)
    assert default_store_path(repo / "a" / "b") == repo / ".prov"
    plain = tmp_path / "plain"
    plain.mkdir()
    assert default_store_path(plain) == plain / ".prov"
    monkeypatch.setenv("PROV_STORE", str(tmp_path / "elsewhere"))
    assert default_store_path(repo) == tmp_path / "elsewhere"
    store = open_store()
    store.put_bytes(b"x")
    assert (tmp_path / "elsewhere" / ".gitignore").read_text() == "*\n"


def test_a_manifest_written_under_another_classification_still_loads(tmp_path):
    """A later prov may classify a key otherwise (a parameter that became identity): the
    stored manifest's recorded digest is then stale, not corrupt. Its bytes are still
    checked against the object's name."""
    import json

    store = open_store(tmp_path / "s")
    doc = Manifest({"run": {"params": {"t": "0.7"}}}).document()
    doc["digest"] = "sha256:" + "0" * 64  # what another table would have given
    obj = store.put_bytes(json.dumps(doc).encode(), "manifest")
    m = store.manifest_object(obj)
    assert m.get("run.params.t") == "0.7" and m.digest() != doc["digest"]
    path = tmp_path / "s" / "objects" / "sha256" / obj[7:9] / obj[9:]
    os.chmod(path, 0o644)
    path.write_bytes(path.read_bytes().replace(b"0.7", b"0.9"))
    with pytest.raises(CorruptObject):
        store.manifest_object(obj)
