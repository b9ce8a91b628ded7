"""prov sbom: validity, completeness against real oracles (cyclonedx-py, dpkg-query),
determinism, purls, the GPU stack, the run, golden files."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from datetime import UTC, datetime

import pytest

from provenance.model import Manifest
from provenance.model.errors import ProvError
from provenance.sbom import build_bom, render, serial_for, validate
from provenance.sbom.source import this_environment
from tests.golden import check_golden
from tests.provenance.sbom.helpers_sbom import (
    prov,
    sample_manifest,
    sample_subject,
)


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@pytest.fixture(scope="module")
def own_env():
    subject = this_environment()
    text = render(build_bom(subject))
    return subject, json.loads(text), text


def test_own_environment_is_strictly_valid_and_matches_cyclonedx_py(own_env, tmp_path):
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator

    subject, doc, text = own_env
    assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(text) is None
    assert doc["specVersion"] == "1.6"
    out = tmp_path / "cdxpy.json"
    exe = shutil.which("cyclonedx-py", path=str(sys.prefix) + "/bin") or "cyclonedx-py"
    subprocess.run([exe, "environment", "--spec-version", "1.6", "--output-format", "JSON",
                    "-o", str(out), sys.executable], check=True, capture_output=True, timeout=180)
    oracle = json.loads(out.read_text())
    theirs = {(_norm(c["name"]), c["version"]) for c in oracle["components"]}
    ours = {(c["name"], c["version"]) for c in doc["components"]
            if c.get("purl", "").startswith("pkg:pypi/")}
    assert ours == theirs
    assert len(ours) > 20

    # Our Requires-Dist graph (extras excluded) is a subgraph of cyclonedx-py's (which adds
    # extras' requirements), and not empty.
    ref_name = {c["bom-ref"]: _norm(c["name"]) for c in oracle["components"]}
    their_edges = {(ref_name[d["ref"]], ref_name[x]) for d in oracle.get("dependencies", [])
                   if d["ref"] in ref_name for x in d.get("dependsOn", []) if x in ref_name}
    purl_name = {c["bom-ref"]: c["name"] for c in doc["components"]
                 if c.get("purl", "").startswith("pkg:pypi/")}
    our_edges = {(purl_name[d["ref"]], purl_name[x]) for d in doc["dependencies"]
                 if d["ref"] in purl_name for x in d.get("dependsOn", []) if x in purl_name}
    assert our_edges and our_edges <= their_edges
    assert ("requests", "urllib3") in our_edges


def test_host_sbom_lists_every_dpkg_and_python_package(own_env):
    subject, doc, _ = own_env
    lines = subprocess.run(
        ["dpkg-query", "-W", "-f", "${db:Status-Abbrev}|${Package}|${Version}|${Architecture}\n"],
        check=True, capture_output=True, text=True).stdout.splitlines()
    installed = {tuple(line.split("|")[1:]) for line in lines if line.startswith("ii")}
    debs = set()
    for c in doc["components"]:
        if c.get("purl", "").startswith("pkg:deb/debian/"):
            arch = re.search(r"arch=([^&]+)", c["purl"]).group(1)
            debs.add((c["name"], c["version"], arch))
    assert debs == installed and len(installed) > 50
    pkgs = subject.manifest.get("python.packages")
    assert {c["name"] for c in doc["components"] if "pkg:pypi" in c.get("purl", "")} == set(pkgs)


def test_licenses_and_hashes_from_installed_metadata(own_env):
    _, doc, _ = own_env
    by_name = {c["name"]: c for c in doc["components"] if "pkg:pypi" in c.get("purl", "")}
    assert by_name["requests"]["licenses"]  # requests declares Apache-2.0
    # The RECORD fingerprint is a property; `hashes` are artifact (wheel/file) hashes only.
    assert "hashes" not in by_name["requests"]
    fp = {p["name"]: p["value"] for p in by_name["requests"]["properties"]}["prov:fingerprint"]
    assert fp.startswith("sha256:")
    props = {p["name"] for p in doc["metadata"]["properties"]}
    assert "prov:dependency-graph" in props


def test_deterministic_and_serial_from_manifest_digest():
    subject = sample_subject()
    a, b = render(build_bom(subject)), render(build_bom(sample_subject()))
    assert a == b
    doc = json.loads(a)
    m = subject.manifest
    assert doc["serialNumber"] == serial_for(m.digest(), subject.run.run_id).urn
    assert "timestamp" not in doc["metadata"]
    when = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
    stamped = json.loads(render(build_bom(subject, timestamp=when)))
    assert stamped["metadata"]["timestamp"].startswith("2026-11-01T12:00:00")
    # A different manifest gives a different serial number.
    other = Manifest(facts={**m.facts, "env": {"CUDA_VISIBLE_DEVICES": "1"}})
    assert serial_for(other.digest()) != serial_for(m.digest())


def test_purls_image_gpu_stack_and_run():
    doc = json.loads(render(build_bom(sample_subject())))
    purls = {c.get("purl") for c in doc["components"]}
    assert "pkg:deb/debian/libc6@2.36-9%2Bdeb12u7?arch=amd64&distro=debian-12&upstream=glibc%402.36-9%2Bdeb12u7" in purls  # noqa: E501
    assert "pkg:deb/debian/passwd@1:4.13%2Bdfsg1-1%2Bb1?arch=amd64&distro=debian-12&upstream=shadow%401:4.13%2Bdfsg1-1" in purls  # noqa: E501
    assert "pkg:deb/debian/xz-utils@5.4.1-0.2?arch=amd64&distro=debian-12" in purls
    assert "pkg:pypi/torch@2.13.0%2Bcu128" in purls
    root = doc["metadata"]["component"]
    assert root["type"] == "container"
    assert root["purl"].startswith("pkg:oci/vllm-nightly@sha256:" + "ab" * 32)
    assert "repository_url=registry.test:5000/llm/vllm-nightly" in root["purl"]
    types = {(c["type"], c["name"]) for c in doc["components"]}
    assert {("device", "NVIDIA H200"), ("firmware", "vbios-gpu0"),
            ("device-driver", "nvidia-driver"), ("platform", "cuda-driver-api"),
            ("platform", "cuda-runtime"), ("library", "cudnn"), ("library", "nccl"),
            ("operating-system", "debian"), ("platform", "cuda-toolkit"),
            ("library", "libcudnn")} <= types
    assert not any(c["name"] == "hip-runtime" for c in doc["components"])  # "none" = absent
    text = json.dumps(doc)
    assert "GPU-00000000" not in text  # the UUID is context, not stack
    assert "sk-live-abcdefghijklmnop" not in text  # argv secrets are redacted
    wf = doc["formulation"][0]["workflows"][0]
    assert wf["uid"] == "r-20261101-0001" and wf["timeStart"] == "2026-11-01T10:00:00Z"
    props = {p["name"]: p["value"] for p in doc["metadata"]["properties"]}
    assert props["prov:run:id"] == "r-20261101-0001"
    assert props["prov:manifest-digest"] == sample_manifest().digest()
    assert props["prov:dependency-graph"].startswith("unavailable:")


def test_golden_files():
    subject = sample_subject()
    check_golden("sbom/sample-run.cdx.json", render(build_bom(subject), "cyclonedx-json"))
    check_golden("sbom/sample-run.cdx.xml", render(build_bom(subject), "cyclonedx-xml"))
    check_golden("sbom/sample-image.cdx.json", render(build_bom(sample_subject(with_run=False))))


def test_strict_validator_rejects_an_invalid_document():
    doc = json.loads(render(build_bom(sample_subject())))
    doc["components"][0]["colour"] = "blue"
    with pytest.raises(ProvError, match="not valid CycloneDX 1.6"):
        validate(json.dumps(doc))


def test_cli_manifest_to_file_and_bad_input(tmp_path):
    mpath = tmp_path / "m.json"
    sample_manifest().write(mpath, fmt="json")
    out = tmp_path / "s.cdx.json"
    r = prov("sbom", "--manifest", str(mpath), "--out", str(out))
    assert r.returncode == 0, r.stderr
    validate(out.read_text())
    r2 = prov("sbom", "--manifest", str(mpath), "--format", "cyclonedx-xml")
    assert r2.returncode == 0 and r2.stdout.startswith("<?xml")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    r3 = prov("sbom", "--manifest", str(bad), "--out", str(tmp_path / "x.json"))
    assert r3.returncode == 2 and r3.stderr.startswith("prov: error:")
    assert len(r3.stderr.strip().splitlines()) == 1 and not (tmp_path / "x.json").exists()
    r4 = prov("sbom", "--run", "r-1", env={"PROV_STORE": str(tmp_path / "store")})
    assert r4.returncode == 2 and r4.stderr.startswith("prov: error: --run r-1: ")


def test_cli_start_imports_no_heavy_modules():
    code = ("import sys, provenance.cli; "
            "heavy = [m for m in sys.modules if m.split('.')[0] in "
            "('cyclonedx', 'cryptography', 'pip_audit', 'packageurl', 'jsonschema', 'lxml')]; "
            "print(heavy); sys.exit(1 if heavy else 0)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout
