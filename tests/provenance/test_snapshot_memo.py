"""The kept digests and text of a warm snapshot's repeated sections (`snapshot_memo`): the
same digest and the same bytes as computing them in full, reused only when every section
but the context-only ones is equal, and never when those hold an identity or secret leaf."""

from __future__ import annotations

import copy

import pytest

from provenance import snapshot_memo
from provenance.model import Manifest
from provenance.snapshot import take_snapshot


@pytest.fixture(scope="module")
def facts() -> dict:
    manifest, _ = take_snapshot()
    return manifest.facts


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PROV_CACHE_DIR", str(tmp_path / "cache"))


def full(facts: dict) -> tuple[str, str]:
    m = Manifest(copy.deepcopy(facts))
    return m.digest(), m.to_json()


def memo(facts: dict) -> tuple[str, str]:
    return snapshot_memo.digest_and_text(Manifest(copy.deepcopy(facts)), None)


def test_cold_and_warm_equal_the_full_computation(facts, monkeypatch):
    expected = full(facts)
    assert memo(facts) == expected  # cold: computed, then kept

    def no_digest(self):
        raise AssertionError("the kept digest was not used")

    later = copy.deepcopy(facts)
    later["host"]["pid"] = 1  # a later snapshot: new context, the same identity
    later["collectors"]["os"]["seconds"] = 9.5
    monkeypatch.setattr(Manifest, "digest", no_digest)
    digest, text = memo(later)
    monkeypatch.undo()
    assert (digest, text) == full(later)
    assert digest == expected[0]
    assert Manifest.loads(text).digest() == digest  # loads re-verifies the recorded digest


def test_a_changed_identity_section_is_computed_again(facts):
    memo(facts)
    changed = copy.deepcopy(facts)
    changed["cpu"]["isa_flags"] = [*changed["cpu"].get("isa_flags", []), "avx_new"]
    got = memo(changed)
    assert got == full(changed) and got[0] != full(facts)[0]
    assert memo(facts) == full(facts)  # and back


def test_a_secret_in_a_context_only_section_is_computed_in_full(facts):
    odd = copy.deepcopy(facts)
    odd["warnings"] = ["one warning"]
    memo(odd)
    odd["host"]["extra"] = "<redacted>"  # host.** is context, but a secret is its own kind
    assert not snapshot_memo._context_is_context({"host": odd["host"]})
    assert memo(odd) == full(odd)


def test_a_damaged_memo_is_ignored(facts):
    memo(facts)
    path = snapshot_memo._memo_path(None)
    with open(path, "w") as fh:
        fh.write('{"version": 1, "deps": {}, "value": {"facts": ')
    assert memo(facts) == full(facts)


def test_a_value_equal_in_python_but_not_in_json_is_not_reused(facts):
    """`1 == 1.0 == True` in Python; the digest tells them apart, and so must the memo."""
    first = copy.deepcopy(facts)
    first["cpu"]["probe_flag"] = 1
    memo(first)
    for other in (1.0, True):
        changed = copy.deepcopy(first)
        changed["cpu"]["probe_flag"] = other
        assert memo(changed) == full(changed) != full(first)
