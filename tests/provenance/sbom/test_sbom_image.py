"""prov sbom / audit --image on the containers test image (debootstrap rootfs + pip venv,
two layers with whiteouts), read without running it. Oracles: the container catalog's own
facts, and dpkg-query / pip's RECORDs run on the unpacked final rootfs."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from provenance.sbom import validate
from tests.provenance.sbom.helpers_sbom import prov


@pytest.fixture(scope="module")
def image():
    from tests.fixtures.images import build_test_image

    return build_test_image()


@pytest.fixture(scope="module")
def image_sbom(image):
    r = prov("sbom", "--image", f"oci:{image.oci}", timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout), r.stdout


def test_image_sbom_lists_every_package_the_catalog_found(image, image_sbom):
    from containers import scan_image

    doc, text = image_sbom
    validate(text)
    facts = scan_image(f"oci:{image.oci}").facts()
    debs = {(c["name"], c["version"]) for c in doc["components"]
            if c.get("purl", "").startswith("pkg:deb/debian/")}
    want_debs = {(k.split(":")[0], v["version"]) for k, v in facts["os"]["dpkg"].items()}
    assert debs == want_debs and len(debs) > 50
    pys = {(c["name"], c["version"]) for c in doc["components"]
           if c.get("purl", "").startswith("pkg:pypi/")}
    assert pys == {(k, v["version"]) for k, v in facts["python"]["packages"].items()}

    # Independent oracle: dpkg-query over the final rootfs (after the whiteout layer).
    out = subprocess.run(
        ["dpkg-query", f"--admindir={image.after}/var/lib/dpkg", "-W", "-f",
         "${db:Status-Abbrev}|${Package}|${Version}\n"],
        check=True, capture_output=True, text=True).stdout
    installed = {tuple(line.split("|")[1:]) for line in out.splitlines() if line[:2] == "ii"}
    assert debs == installed
    assert not any(name == "tzdata" for name, _ in debs)  # purged in layer 1
    assert not any(name == "idna" for name, _ in pys)  # uninstalled in layer 1
    assert ("packaging", "24.2") in pys and ("six", "1.17.0") in pys


def test_image_component_purl_and_layers(image, image_sbom):
    doc, text = image_sbom
    root = doc["metadata"]["component"]
    assert root["type"] == "container"
    m = re.match(r"pkg:oci/[^@]+@sha256:([0-9a-f]{64})\?arch=amd64", root["purl"])
    assert m, root["purl"]
    props = {p["name"]: p["value"] for p in root.get("properties", [])}
    assert props["prov:image:manifest_digest"] == "sha256:" + m.group(1)
    assert "prov:image:layers.1.created_by" in props
    assert "hf_abcdefghijklmnopqrstuvwxyz012345" not in text  # image env secrets stay redacted
    deb = next(c for c in doc["components"] if c.get("purl", "").startswith("pkg:deb/debian/bash@"))
    assert "distro=debian-12" in deb["purl"]
    assert {"name": "prov:layer", "value": "0"} in deb["properties"]


def test_audit_an_image_offline(image, tmp_path):
    from tests.provenance.audit.test_audit import RECORDS

    db = tmp_path / "osv"
    db.mkdir()
    for rec in RECORDS:
        (db / f"{rec['id']}.json").write_text(json.dumps(rec))
    r = prov("audit", "--image", f"oci:{image.oci}", "--osv-db", str(db), "--json", timeout=300)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["audited"] >= 3 and doc["not_audited"] == 0 and doc["findings"] == []
