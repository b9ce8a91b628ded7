"""#18 item 8: the statement and the SBOM follow their specs, checked by the specs' own
libraries (in-toto-attestation's protobuf bindings, cyclonedx-python-lib's strict
validator)."""

from __future__ import annotations

import hashlib
import json

import pytest

from provenance.publish.bundle import SBOM_NAME, UNSIGNED_NAME, publish
from provenance.sbom import validate
from tests.provenance.sbom.helpers_sbom import sample_subject


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("spec")
    r = tmp / "agreement.json"
    r.write_text(json.dumps({"metric": "top1_agreement", "value": 0.9}))
    out = tmp / "b"
    publish([r], sample_subject(), out, allow_unrecorded=True)
    return out


def test_resource_descriptors_digest_the_resources_bytes(bundle):
    st = json.loads((bundle / UNSIGNED_NAME).read_text())
    dep = st["predicate"]["buildDefinition"]["resolvedDependencies"][0]
    assert dep["name"] == "manifest"
    data = (bundle / dep["uri"]).read_bytes()
    assert dep["digest"]["sha256"] == hashlib.sha256(data).hexdigest()
    # The identity digest, which names the file, is an annotation and differs from it.
    assert dep["annotations"]["identityDigest"] != "sha256:" + dep["digest"]["sha256"]
    assert dep["uri"] == f"manifests/{dep['annotations']['identityDigest'][7:]}.json"
    for d in st["subject"] + st["predicate"]["runDetails"]["byproducts"]:
        assert d["digest"]["sha256"] == hashlib.sha256((bundle / d["name"]).read_bytes()
                                                       ).hexdigest()


def test_cyclonedx_hashes_are_artifact_hashes_only(bundle):
    text = (bundle / SBOM_NAME).read_text()
    validate(text)  # cyclonedx-python-lib, strict
    doc = json.loads(text)
    for c in doc["components"]:
        props = {p["name"]: p["value"] for p in c.get("properties", [])}
        fingerprint = props.get("prov:fingerprint", "")
        hashes = {h["content"] for h in c.get("hashes", [])}
        assert fingerprint[7:] not in hashes, c["name"]  # a RECORD fingerprint is no hash
    assert any("prov:fingerprint" in {p["name"] for p in c.get("properties", [])}
               for c in doc["components"])


def check_with_in_toto(payload: bytes) -> dict:
    """The statement's bytes, parsed strictly (an unknown field is an error) into the in-toto
    Statement and ResourceDescriptor protobufs and validated by the library. (prov builds
    the statement with the same library: this checks what reached the file.)"""
    from google.protobuf import json_format
    from in_toto_attestation.v1 import statement_pb2
    from in_toto_attestation.v1.resource_descriptor import ResourceDescriptor
    from in_toto_attestation.v1.statement import Statement

    doc = json.loads(payload)
    pb = json_format.ParseDict(doc, statement_pb2.Statement(), ignore_unknown_fields=False)
    Statement.copy_from_pb(pb).validate()
    pred = doc["predicate"]
    for d in pred["buildDefinition"]["resolvedDependencies"] + pred["runDetails"]["byproducts"]:
        rd = json_format.ParseDict(d, ResourceDescriptor().pb, ignore_unknown_fields=False)
        ResourceDescriptor.copy_from_pb(rd).validate()
    return doc


def test_statement_parses_with_in_toto_attestation(bundle):
    doc = check_with_in_toto((bundle / UNSIGNED_NAME).read_bytes())
    assert doc["_type"] == "https://in-toto.io/Statement/v1" and len(doc["subject"]) == 1
