"""prov publish --to registry: / prov verify registry:...@DIGEST against Debian's
docker-registry (distribution, no referrers API) on loopback; the image is pushed with
skopeo, and skopeo reads the artifact manifest back as the oracle."""

from __future__ import annotations

import json
import subprocess

import pytest

from provenance.publish.registry import Target, referrers
from tests.provenance.sbom.helpers_sbom import prov


@pytest.fixture(scope="module")
def registry_image(tmp_path_factory):
    from tests.fixtures.images import build_test_image
    from tests.fixtures.registry import start_registry

    image = build_test_image()
    reg = start_registry()
    try:
        subprocess.run(["skopeo", "copy", "--dest-tls-verify=false",
                        f"oci:{image.small_oci}:nightly", f"docker://{reg.host}/prov/img:nightly"],
                       check=True, capture_output=True, timeout=120)
        work = tmp_path_factory.mktemp("reg")
        snap = work / "img.json"
        r = prov("snapshot", "--image", f"registry:{reg.host}/prov/img:nightly", "-o", str(snap),
                 "-f", "json", timeout=300)
        assert r.returncode == 0, r.stderr
        assert prov("keygen", "-o", str(work / "k")).returncode == 0
        yield reg, work, json.loads(snap.read_text())["image"]["manifest_digest"]
    finally:
        reg.stop()


def test_push_and_verify_from_registry(registry_image):
    reg, work, image_digest = registry_image
    res = work / "agreement.json"
    res.write_text(json.dumps({"metric": "top1_agreement", "value": 0.93}))
    r = prov("publish", str(res), "--manifest", str(work / "img.json"), "--key",
             str(work / "k.key"), "--to", f"registry:{reg.host}/prov/img", timeout=300)
    assert r.returncode == 0, r.stderr
    ref = r.stdout.strip()
    assert ref.startswith(f"registry:{reg.host}/prov/img@sha256:")
    digest = ref.split("@", 1)[1]
    assert "referrers tag sha256-" in r.stderr  # distribution 2.x has no referrers API

    raw = subprocess.run(["skopeo", "inspect", "--raw", "--tls-verify=false",
                          f"docker://{reg.host}/prov/img@{digest}"], check=True,
                         capture_output=True, text=True, timeout=60).stdout
    manifest = json.loads(raw)
    assert manifest["subject"]["digest"] == image_digest
    assert manifest["artifactType"] == "application/vnd.prov.bundle.v1"
    target = Target(reg.host, "prov/img")
    assert referrers(target, image_digest) == [digest]

    ok = prov("verify", ref, "--key", str(work / "k.pub"), timeout=300)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert f"artifact subject {image_digest} is the run's image" in ok.stdout
    assert prov("keygen", "-o", str(work / "other")).returncode == 0
    other = work / "other.pub"
    bad = prov("verify", ref, "--key", str(other), timeout=300)
    assert bad.returncode == 1 and "FAILED at step 2" in bad.stdout

    # A second bundle for the same image is added to the referrers index, not replacing it.
    r2 = prov("publish", str(res), "--manifest", str(work / "img.json"), "--param", "run=2",
              "--to", f"registry:{reg.host}/prov/img", timeout=300)
    assert r2.returncode == 0, r2.stderr
    assert set(referrers(target, image_digest)) == {digest, r2.stdout.strip().split("@")[1]}


def test_registry_errors_are_one_line(registry_image):
    reg, work, image_digest = registry_image
    notbundle = prov("verify", f"registry:{reg.host}/prov/img@{image_digest}")
    assert notbundle.returncode == 2 and "not a prov bundle artifact" in notbundle.stderr
    res = work / "r.json"
    res.write_text("{}")
    elsewhere = prov("publish", str(res), "--manifest", str(work / "img.json"), "--to",
                     f"registry:{reg.host}/other/repo")
    assert elsewhere.returncode == 2 and "is not in" in elsewhere.stderr
    assert len(elsewhere.stderr.strip().splitlines()) == 1
