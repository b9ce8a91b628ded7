"""The catalog equals what dpkg-query and pip list say about the rootfs after the deletions."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from containers import scan_image
from containers.catalogers.python_dist import normalize_name
from provenance.collectors import python_env
from tests.fixtures.images import DELETED_DEB, DELETED_PY, BuiltImage


@pytest.fixture(scope="module")
def scan(image: BuiltImage):
    return scan_image(f"oci:{image.oci}")


def _dpkg_query(image: BuiltImage) -> dict[str, str]:
    out = subprocess.run(
        [
            "dpkg-query",
            "-W",
            "--admindir",
            str(image.after / "var/lib/dpkg"),
            "-f",
            "${db:Status-Abbrev}\t${binary:Package}\t${Version}\n",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    found = {}
    for line in out.splitlines():
        status, name, version = line.split("\t")
        if status.strip() in ("ii", "iU", "iF", "iW", "it"):  # files on disk
            found[name] = version
    return found


def _pip_list(path) -> dict[str, str]:
    out = subprocess.run(
        [sys.executable, "-m", "pip", "list", "--path", str(path), "--format", "json"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return {normalize_name(p["name"]): p["version"] for p in json.loads(out)}


def test_dpkg_equals_dpkg_query(scan, image: BuiltImage) -> None:
    ours = {name: facts["version"] for name, facts in scan.os["dpkg"].items()}
    oracle = _dpkg_query(image)
    assert DELETED_DEB not in oracle  # the oracle saw the deletion too
    assert ours == oracle


def test_python_equals_pip_list_per_location(scan, image: BuiltImage) -> None:
    by_location: dict[str, dict[str, str]] = {}
    for dist in scan.python_dists:
        by_location.setdefault(dist.location, {})[dist.name] = dist.facts["version"]
    assert set(by_location) == {"/" + image.site_packages, "/usr/lib/python3/dist-packages"}
    for location, ours in by_location.items():
        assert ours == _pip_list(image.after / location.lstrip("/")), location
    assert DELETED_PY not in by_location["/" + image.site_packages]


def test_fingerprints_equal_the_host_collector(scan, image: BuiltImage) -> None:
    """The same install fingerprints identically in an image and on a host."""
    host = python_env.distributions([str(image.after / image.site_packages)], [])
    for name, facts in host.items():
        ours = next(
            d for d in scan.python_dists if d.name == name and "site-packages" in d.location
        )
        assert ours.facts["fingerprint"] == facts["fingerprint"], name
        assert ours.facts["record_sha256"] == facts["record_sha256"], name


def test_debian_python_package_is_linked(scan) -> None:
    deb_six = next(d for d in scan.python_dists if d.location == "/usr/lib/python3/dist-packages")
    assert deb_six.facts["debian_package"] == "python3-six"
    assert scan.os["dpkg"]["python3-six"]["version"].startswith(deb_six.facts["version"])
    shadowed = scan.python["packages"]["six"]["shadowed"]
    assert any("python3-six" in s for s in shadowed)


def test_layer_attribution(scan) -> None:
    # everything came from the debootstrap layer; the second layer only deleted things
    assert {f["layer"] for f in scan.os["dpkg"].values()} == {0}
    assert {f["layer"] for f in scan.python["packages"].values()} == {0}
    assert "debootstrap" in scan.layers[0].created_by
    assert "pip uninstall" in scan.layers[1].created_by


def test_manifest_and_secrets(scan) -> None:
    from provenance.model import Manifest

    m = Manifest(scan.facts())
    flat = m.flat()
    assert flat["image.config.env.HF_TOKEN"] == "<redacted>"
    assert "hf_abcdefghijklmnopqrstuvwxyz012345" not in m.to_json()
    assert m.digest().startswith("sha256:")
