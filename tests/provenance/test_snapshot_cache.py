"""The exec snapshot cache: a hit equals a fresh snapshot; any dependency change misses."""

from __future__ import annotations

import os

from provenance.snapshot_cache import cache_key, cached_snapshot, fresh_snapshot, still_valid


def test_hit_equals_fresh_and_changes_miss(tmp_path, monkeypatch):
    monkeypatch.setenv("PROV_CACHE_DIR", str(tmp_path / "cache"))
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


def test_a_changed_standalone_reader_changes_the_key(tmp_path, monkeypatch):
    """The torch reader the snapshot's subprocess runs is collector code too."""
    from provenance.collectors.standalone import torch_state

    monkeypatch.setenv("PROV_CACHE_DIR", str(tmp_path / "cache"))
    reader = torch_state.__file__
    st = os.stat(reader)
    before = cache_key(None)
    os.utime(reader, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    try:
        assert cache_key(None) != before
    finally:
        os.utime(reader, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert cache_key(None) == before


def test_unwritable_cache_only_costs_speed(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("PROV_CACHE_DIR", str(blocker))
    snap = cached_snapshot()
    assert not snap.hit and snap.manifest_digest.startswith("sha256:")
