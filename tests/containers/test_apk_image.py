"""An Alpine-based image (tests/fixtures/alpine_image.py): its apk packages in the catalog,
the image lock and the CycloneDX SBOM, the files they own verified by apk's own checksums,
and the host collector reading the same database the same way."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packageurl import PackageURL

from containers import scan_image
from provenance.collectors import os_info
from tests.fixtures import alpine_image
from tests.fixtures.alpine_image import BASE, BINSH, BUSYBOX, MUSL, ZLIB

PROV = str(Path(sys.executable).with_name("prov"))
PURLS = {
    "musl": "pkg:apk/alpine/musl@1.2.5-r9?arch=x86_64&distro=alpine-3.21.3",
    "busybox": "pkg:apk/alpine/busybox@1.37.0-r12?arch=x86_64&distro=alpine-3.21.3",
    # syft writes the origin as `upstream` when it is another package
    "busybox-binsh": "pkg:apk/alpine/busybox-binsh@1.37.0-r12"
                     "?arch=x86_64&distro=alpine-3.21.3&upstream=busybox",
    "zlib": "pkg:apk/alpine/zlib@1.3.1-r2?arch=x86_64&distro=alpine-3.21.3",
}


def prov(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([PROV, *args], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def alpine(tmp_path_factory) -> str:
    return alpine_image.build_alpine_image(tmp_path_factory.mktemp("alpine"))


def test_the_catalog_holds_every_apk_package_with_the_layer_that_installed_it(alpine) -> None:
    scan = scan_image(alpine)
    assert scan.os["release"]["id"] == "alpine" and "dpkg" not in scan.os
    assert scan.os["apk"] == {
        "musl": {"version": "1.2.5-r9", "arch": "x86_64", "layer": 0},
        "busybox": {"version": "1.37.0-r12", "arch": "x86_64", "layer": 0},
        "busybox-binsh": {"version": "1.37.0-r12", "arch": "x86_64", "origin": "busybox",
                          "layer": 0},
        "zlib": {"version": "1.3.1-r2", "arch": "x86_64", "layer": 1},
    }


def test_the_host_collector_reads_the_database_with_the_same_parser(alpine, tmp_path) -> None:
    (tmp_path / "lib/apk/db").mkdir(parents=True)
    (tmp_path / "lib/apk/db/installed").write_bytes(alpine_image.installed(BASE + (ZLIB,)))
    host = os_info.collect([], tmp_path)["apk"]
    image = scan_image(alpine).os["apk"]
    assert host == {k: {f: v for f, v in facts.items() if f != "layer"}
                    for k, facts in image.items()}


def test_pin_locks_apk_packages_and_verifies_their_files(alpine, tmp_path) -> None:
    lock = tmp_path / "alpine.lock.toml"
    pinned = prov("pin", alpine, "--out", str(lock), "--json")
    assert pinned.returncode == 0, pinned.stderr
    assert json.loads(pinned.stdout)["packages"] == 4
    doc = tomllib.loads(lock.read_text())
    assert {k: v["version"] for k, v in doc["packages"].items()} == {
        f"apk:{p.name}": p.version for p in (*BASE, ZLIB)
    }
    assert doc["packages"]["apk:zlib"]["layer"] == 1
    files = doc["files"]
    # every file and symlink apk lists is checked against its Z: checksum, and all match
    for pkg in (MUSL, BUSYBOX, BINSH, ZLIB):
        check = files[f"apk:{pkg.name}"]
        assert check["checked"] == len(pkg.files) + len(pkg.links), pkg.name
        assert set(check) == {"checked"}, check
    # the regular files no package lists: os-release and apk's database itself
    assert doc["coverage"]["unlisted"] == 2
    assert doc["coverage"]["checked"] == sum(len(p.files) for p in (*BASE, ZLIB))
    ok = prov("verify", "--lock", str(lock), alpine)
    assert ok.returncode == 0, ok.stdout + ok.stderr


def test_a_file_changed_after_apk_installed_it_is_named(tmp_path) -> None:
    source = alpine_image.build_alpine_image(
        tmp_path, tamper={"bin/busybox": b"\x7fELF not busybox", "lib/libc.musl-x86_64.so.1":
                          b"a file where musl's symlink was"})
    scan = scan_image(source, verify_files=True)
    busybox = scan.files["apk:busybox"]
    (issue,) = busybox.modified
    assert (issue.path, issue.layer, issue.installed) == ("/bin/busybox", 2, 0)
    assert issue.expected == "sha1:" + hashlib.sha1(b"\x7fELF busybox").hexdigest()
    musl = scan.files["apk:musl"]
    (replaced,) = musl.modified  # its symlink is a regular file now
    assert replaced.path == "/lib/libc.musl-x86_64.so.1" and replaced.layer == 2
    assert scan.files["apk:zlib"].clean and scan.files["apk:busybox-binsh"].clean


def test_sbom_of_the_image_lists_apk_packages_with_syfts_purls(alpine) -> None:
    from provenance.sbom import validate

    r = prov("sbom", "--image", alpine)
    assert r.returncode == 0, r.stderr
    validate(r.stdout)  # cyclonedx-python-lib's JSON schema validator
    doc = json.loads(r.stdout)
    apks = {c["name"]: c["purl"] for c in doc["components"]
            if c.get("purl", "").startswith("pkg:apk/")}
    assert set(apks) == set(PURLS)
    for name, purl in apks.items():
        # the same package URL as syft's (qualifiers in canonical order)
        assert PackageURL.from_string(purl) == PackageURL.from_string(PURLS[name]), purl
        assert purl == PackageURL.from_string(PURLS[name]).to_string()
    root = doc["metadata"]["component"]["bom-ref"]
    (deps,) = [d.get("dependsOn", []) for d in doc["dependencies"] if d["ref"] == root]
    assert set(apks.values()) <= set(deps)


def test_snapshot_of_the_image_counts_apk_packages(alpine) -> None:
    r = prov("snapshot", "--image", alpine)
    assert r.returncode == 0, r.stderr
    assert "Alpine Linux v3.21  4 apk" in r.stdout
