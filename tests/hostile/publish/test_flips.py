"""Property: a random byte flip anywhere in a bundle is caught, or changes no content.

"Content-identical" is checked, not assumed: when a flipped archive still verifies, its
unpacked members must be byte-for-byte the original's (a flip in the gzip header's mtime or
OS byte changes no member)."""

from __future__ import annotations

import gzip
import io
import json
import tarfile
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from provenance.publish.archive import write_tar_gz
from provenance.publish.bundle import publish
from provenance.publish.keys import generate
from provenance.publish.verify import verify_bundle
from tests.provenance.sbom.helpers_sbom import sample_subject


@pytest.fixture(scope="module")
def signed(tmp_path_factory):
    d = tmp_path_factory.mktemp("flip")
    priv, pub, _ = generate(d / "k")
    r = d / "agreement.json"
    r.write_text(json.dumps({"metric": "top1_agreement", "value": 0.931}))
    tree = d / "tree"
    publish([r], sample_subject(), tree, key_path=priv, allow_unrecorded=True)
    archive = d / "b.tar.gz"
    write_tar_gz(tree, archive)
    assert verify_bundle(str(archive), pub).failed is None
    files = {p.relative_to(tree).as_posix(): p.read_bytes() for p in tree.rglob("*")
             if p.is_file()}
    return archive.read_bytes(), files, pub


def _members(data: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(data)), mode="r:") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(where=st.floats(0, 1, exclude_max=True), bit=st.integers(0, 7))
def test_archive_flips_are_caught_or_content_identical(signed, where, bit):
    data, _, pub = signed
    flipped = bytearray(data)
    i = int(where * len(data))
    flipped[i] ^= 1 << bit
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "f.tar.gz"
        path.write_bytes(flipped)
        report = verify_bundle(str(path), pub)
    if report.failed is None:
        assert _members(bytes(flipped)) == _members(data), f"flip at {i} passed unnoticed"


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), bit=st.integers(0, 7))
def test_directory_flips_are_always_caught(signed, data, bit):
    _, files, pub = signed
    name = data.draw(st.sampled_from(sorted(files)))
    content = bytearray(files[name])
    i = data.draw(st.integers(0, len(content) - 1))
    content[i] ^= 1 << bit
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for rel, body in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(bytes(content) if rel == name else body)
        report = verify_bundle(str(root), pub)
    # A file's bytes changed: every byte of every file is signed or hashed, so always caught.
    assert report.failed is not None, f"{name} byte {i} bit {bit}"
