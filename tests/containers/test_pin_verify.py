"""`prov pin` then `prov verify --lock`: a moved tag is refused with old and new digests."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.containers.conftest import Pushed
from tests.fixtures.images import BuiltImage
from tests.fixtures.registry import Registry, start_registry

PROV = str(Path(sys.executable).with_name("prov"))


def prov(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([PROV, *args], capture_output=True, text=True, timeout=300)


@pytest.fixture()
def own_registry(image: BuiltImage):
    """A registry of its own, so moving the tag does not disturb other tests."""
    reg = start_registry()
    try:
        yield reg
    finally:
        reg.stop()


def _push_oci(layout: Path, ref: str) -> None:
    subprocess.run(
        [
            "skopeo",
            "copy",
            "--quiet",
            "--dest-tls-verify=false",
            f"oci:{layout}:nightly",
            f"docker://{ref}",
        ],
        check=True,
    )


def test_moved_tag_is_refused(image: BuiltImage, own_registry: Registry, tmp_path: Path) -> None:
    ref = f"{own_registry.host}/prov/img:nightly"
    _push_oci(image.oci, ref)
    lock = tmp_path / "img.lock.toml"
    pinned = prov("pin", f"registry:{ref}", "--out", str(lock), "--json")
    assert pinned.returncode == 0, pinned.stderr
    summary = json.loads(pinned.stdout)
    old_manifest, old_config = summary["manifest_digest"], summary["config_digest"]
    assert summary["reference"] == f"{own_registry.host}/prov/img@{old_manifest}"
    text = lock.read_text()
    assert old_manifest in text and 'kind = "prov-image-lock"' in text
    assert '"python:packaging" = {version = "24.2", layer = 0' in text
    # unchanged: verify passes (the source recorded in the lock is used)
    ok = prov("verify", "--lock", str(lock))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    # the tag moves to a different image
    _push_oci(image.small_oci, ref)
    moved = prov("verify", "--lock", str(lock), f"registry:{ref}", "--json")
    assert moved.returncode == 1, moved.stdout + moved.stderr
    report = json.loads(moved.stdout)
    keys = {d["key"]: d for d in report["differences"]}
    assert keys["image.manifest_digest"]["locked"] == old_manifest
    assert keys["image.manifest_digest"]["now"] not in (None, old_manifest)
    assert keys["image.config_digest"]["locked"] == old_config
    assert keys["packages.dpkg:bash"]["change"] == "missing"
    # the human table names both digests too
    table = prov("verify", "--lock", str(lock), f"registry:{ref}")
    assert table.returncode == 1
    flat = table.stdout.replace("\n", "")
    assert old_manifest[:30] in flat and keys["image.manifest_digest"]["now"][:30] in flat


def test_pin_archive_verifies_against_registry_copy(
    image: BuiltImage, pushed: Pushed, tmp_path: Path
) -> None:
    """A lock made from a docker-archive verifies against the pushed copy: the config
    digest anchors it, the synthesized manifest digest is not compared."""
    lock = tmp_path / "a.lock.toml"
    assert prov("pin", f"docker-archive:{image.archive}", "--out", str(lock)).returncode == 0
    res = prov("verify", "--lock", str(lock), f"registry:{pushed.ref}")
    assert res.returncode == 0, res.stdout + res.stderr


def test_changed_package_is_named(image: BuiltImage, tmp_path: Path) -> None:
    """A lock edited to an older version of one package: verify names exactly it."""
    lock = tmp_path / "c.lock.toml"
    assert prov("pin", f"oci:{image.oci}", "--out", str(lock)).returncode == 0
    text = lock.read_text().replace(
        '"python:packaging" = {version = "24.2"', '"python:packaging" = {version = "24.1"'
    )
    lock.write_text(text)
    res = prov("verify", "--lock", str(lock), "--json")
    assert res.returncode == 1
    diffs = json.loads(res.stdout)["differences"]
    assert [d["key"] for d in diffs] == ["packages.python:packaging.version"]


def test_bad_lock_and_bad_source_are_one_line_errors(image: BuiltImage, tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("kind = [unclosed\n")
    res = prov("verify", "--lock", str(bad), f"oci:{image.oci}")
    assert res.returncode == 2 and res.stderr.startswith("prov: error:")
    assert len(res.stderr.strip().splitlines()) == 1
    res = prov("pin", "oci:/nonexistent/dir", "--out", str(tmp_path / "x.toml"))
    assert res.returncode == 2 and "no such file" in res.stderr
    assert not (tmp_path / "x.toml").exists()


def test_no_daemon_is_one_line(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/none.sock")
    res = subprocess.run(
        [PROV, "snapshot", "--image", "vllm/vllm-openai:nightly"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 2
    assert "no Docker daemon reachable" in res.stderr and "registry:" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


def test_snapshot_image_diffs_against_a_host_snapshot(image: BuiltImage, tmp_path: Path) -> None:
    img = tmp_path / "img.toml"
    host = tmp_path / "host.toml"
    assert prov("snapshot", "--image", f"oci:{image.oci}", "--out", str(img)).returncode == 0
    assert prov("snapshot", "--out", str(host)).returncode == 0
    res = prov("diff", str(img), str(host), "--json")
    assert res.returncode == 1, res.stderr
    # two reads of one image through different formats: identical identity
    img2 = tmp_path / "img2.toml"
    r2 = prov("snapshot", "--image", f"docker-archive:{image.archive}", "--out", str(img2))
    assert r2.returncode == 0
    same = prov("diff", str(img), str(img2))
    assert same.returncode == 0, same.stdout
