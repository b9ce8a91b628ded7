"""The exec snapshot cache: a hit equals a fresh snapshot; any dependency change misses; a
snapshot whose dependencies changed inside the racy window is neither kept nor taken as proof
that nothing changed. Directories a test made a moment ago are inside that window: the tests
of everything else count them as settled (`stamped.RACY_NS` 0)."""

from __future__ import annotations

import os

from provenance.collectors import stamped
from provenance.snapshot import cached_snapshot, fresh_snapshot, still_valid
from provenance.snapshot.cache import cache_key

RACY_NS = stamped.RACY_NS


def test_hit_equals_fresh_and_changes_miss(tmp_path, monkeypatch):
    monkeypatch.setenv("PROV_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(stamped, "RACY_NS", 0)
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    first = cached_snapshot()
    assert not first.hit
    second = cached_snapshot()
    assert second.hit and second.text == first.text
    # the cache never changes the answer: a fresh snapshot has the same identity
    assert fresh_snapshot().manifest_digest == second.manifest_digest
    assert still_valid(second)

    # a relevant environment variable is part of the key
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":16:8")
    assert cache_key(None) != second.key and not still_valid(second)
    third = cached_snapshot()
    assert not third.hit and third.manifest_digest != second.manifest_digest
    assert third.manifest().get("env.CUBLAS_WORKSPACE_CONFIG") == ":16:8"
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG")
    assert cached_snapshot().hit  # back to the first entry

    # a distribution appearing in a sys.path directory invalidates the entry
    dist = site / "fakepkg-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: fakepkg\nVersion: 1.0\n\n")
    st = os.stat(site)
    os.utime(site, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert not still_valid(second)
    fourth = cached_snapshot()
    assert not fourth.hit
    assert fourth.manifest().get("python.packages.fakepkg.version") == "1.0"


def test_a_changed_standalone_reader_misses(tmp_path, monkeypatch):
    """The torch reader the snapshot's subprocess runs is collector code too: a dependency."""
    from provenance.collectors.standalone import torch_state

    monkeypatch.setenv("PROV_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(stamped, "RACY_NS", 0)
    snap = cached_snapshot()
    assert torch_state.__file__ in snap.deps and still_valid(snap)
    st = os.stat(torch_state.__file__)
    os.utime(torch_state.__file__, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    try:
        assert not still_valid(snap) and not cached_snapshot().hit
    finally:
        os.utime(torch_state.__file__, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_a_racy_snapshot_is_not_kept_nor_proof(tmp_path, monkeypatch):
    """The real window: a sys.path directory changed a moment ago."""
    monkeypatch.setenv("PROV_CACHE_DIR", str(tmp_path / "cache"))
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    first = cached_snapshot()
    assert not first.settled and not still_valid(first)
    assert not cached_snapshot().hit


def test_unwritable_cache_only_costs_speed(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("PROV_CACHE_DIR", str(blocker))
    snap = cached_snapshot()
    assert not snap.hit and snap.manifest_digest.startswith("sha256:")
