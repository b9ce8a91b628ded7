"""The image lock: round trip and comparison on plain facts (no image needed)."""

from __future__ import annotations

import copy

import pytest

from lockfiles.image_lock import LockError, compare, lock_from_facts, read_lock

FACTS = {
    "image": {
        "source": "registry:h/r:t",
        "reference": "h/r@sha256:" + "1" * 64,
        "manifest_digest": "sha256:" + "1" * 64,
        "manifest_synthesized": False,
        "config_digest": "sha256:" + "2" * 64,
        "platform": "linux/amd64",
        "layers": {
            "0": {
                "digest": "sha256:" + "3" * 64,
                "diff_id": "sha256:" + "4" * 64,
                "chain_id": "sha256:" + "4" * 64,
                "created_by": "RUN x",
            },
        },
    },
    "os": {"dpkg": {"bash": {"version": "5.2", "arch": "amd64", "layer": 0}}},
    "python": {"packages": {"idna": {"version": "3.10", "layer": 0, "fingerprint": "sha256:ab"}}},
}


def test_round_trip_matches() -> None:
    lock = read_lock(lock_from_facts(FACTS))
    assert compare(lock, FACTS) == []
    assert lock["packages"]["python:idna"] == {
        "version": "3.10",
        "layer": 0,
        "fingerprint": "sha256:ab",
    }


def test_each_change_is_named() -> None:
    lock = read_lock(lock_from_facts(FACTS))
    now = copy.deepcopy(FACTS)
    now["python"]["packages"]["idna"]["version"] = "3.11"
    del now["os"]["dpkg"]["bash"]
    now["os"]["dpkg"]["zsh"] = {"version": "5.9", "layer": 0}
    now["image"]["layers"]["0"]["diff_id"] = "sha256:" + "5" * 64
    keys = {(d.key, d.change) for d in compare(lock, now)}
    assert keys == {
        ("packages.python:idna.version", "changed"),
        ("packages.dpkg:bash", "missing"),
        ("packages.dpkg:zsh", "extra"),
        ("layers.0.diff_id", "changed"),
    }


def test_synthesized_manifest_is_not_compared() -> None:
    lock = read_lock(lock_from_facts(FACTS))
    now = copy.deepcopy(FACTS)
    now["image"]["manifest_digest"] = "sha256:" + "9" * 64
    now["image"]["manifest_synthesized"] = True
    assert compare(lock, now) == []
    now["image"]["manifest_synthesized"] = False
    assert [d.key for d in compare(lock, now)] == ["image.manifest_digest"]


@pytest.mark.parametrize(
    "text", ["kind = [", 'kind = "other"', 'kind = "prov-image-lock"\nformat = 9\n']
)
def test_bad_locks(text: str) -> None:
    with pytest.raises(LockError):
        read_lock(text)
