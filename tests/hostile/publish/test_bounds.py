"""What `prov verify` will read of a bundle, and what it refuses unread (issue #30 items 2, 5).

Every forgery is a real signed bundle (prov publish) changed in code and signed again with
the RIGHT key, so only the bounds can stop it. Peak memory is measured in
bench/bench_verify_memory.py, not here: these tests show the behaviour (refused in one line
with exit 2, or verified) and that an over-bound file is never read (a 64 GiB sparse file).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from provenance.publish.archive import write_tar_gz
from provenance.publish.bounds import (
    MAX_DOCUMENT_BYTES,
    MAX_DOCUMENT_MEMORY,
    MAX_ENVELOPE_BYTES,
    MAX_STATEMENT_BYTES,
    BoundError,
)
from provenance.publish.bundle import SBOM_NAME, SIGNED_NAME, publish
from provenance.publish.dsse import sign
from provenance.publish.keys import generate, load_private
from provenance.publish.verify import verify_bundle
from tests.provenance.sbom.helpers_sbom import PROV, sample_subject

TIMEOUT = 300


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    d = tmp_path_factory.mktemp("keys")
    priv, pub, _ = generate(d / "signer")
    return priv, pub


@pytest.fixture(scope="module")
def signed(tmp_path_factory, keys) -> Path:
    root = tmp_path_factory.mktemp("bundle")
    result = root / "agreement.json"
    result.write_text(json.dumps({"metric": "top1_agreement", "value": 0.931}))
    publish([result], sample_subject(), root / "bundle", key_path=keys[0],
            allow_unrecorded=True)
    return root / "bundle"


def _copy(signed: Path, tmp_path: Path) -> Path:
    out = tmp_path / "bundle"
    shutil.copytree(signed, out)
    return out


def _statement(bundle: Path) -> dict:
    env = json.loads((bundle / SIGNED_NAME).read_text())
    return json.loads(base64.b64decode(env["payload"]))


def _resign(bundle: Path, key: Path, statement: dict) -> None:
    payload = json.dumps(statement).encode()
    (bundle / SIGNED_NAME).write_text(json.dumps(sign(payload, load_private(key))))


def _pad_statement(bundle: Path, key: Path, size: int) -> None:
    """The statement grown to `size` bytes by a parameter, signed again."""
    st = _statement(bundle)
    params = st["predicate"]["buildDefinition"]["externalParameters"]["parameters"]
    params["pad"] = ""
    params["pad"] = "x" * (size - len(json.dumps(st).encode()))
    _resign(bundle, key, st)
    assert len(json.dumps(st).encode()) == size


def _replace(bundle: Path, key: Path, name: str, data: bytes) -> None:
    """`name` in the bundle replaced by `data`, its digest in the statement updated."""
    (bundle / name).write_bytes(data)
    st = _statement(bundle)
    pred = st["predicate"]
    for d in pred["runDetails"]["byproducts"] + st["subject"]:
        if d["name"] == name:
            d["digest"]["sha256"] = hashlib.sha256(data).hexdigest()
    _resign(bundle, key, st)


def _verify(target: Path, pub: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*PROV, "verify", str(target), "--key", str(pub)],
                          capture_output=True, text=True, timeout=TIMEOUT)


def _refused(proc: subprocess.CompletedProcess, *words: str) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert all(w in proc.stderr for w in words), proc.stderr


def _archive(bundle: Path, tmp_path: Path) -> Path:
    out = tmp_path / "bundle.tar.gz"
    write_tar_gz(bundle, out)
    return out


# ---- the statement and its envelope ----------------------------------------------------------
def test_a_statement_at_its_bound_verifies(signed, keys, tmp_path) -> None:
    """8 MiB of statement, signed: verified, in both forms (before issue #30 this one took
    1.3 GB of memory to verify)."""
    bundle = _copy(signed, tmp_path)
    _pad_statement(bundle, keys[0], MAX_STATEMENT_BYTES)
    for target in (bundle, _archive(bundle, tmp_path)):
        report = verify_bundle(str(target), keys[1])
        assert report.failed is None, report.to_json()


def test_a_statement_past_its_bound_is_refused_in_one_line(signed, keys, tmp_path) -> None:
    bundle = _copy(signed, tmp_path)
    _pad_statement(bundle, keys[0], MAX_STATEMENT_BYTES + 1)
    assert (bundle / SIGNED_NAME).stat().st_size <= MAX_ENVELOPE_BYTES  # only the payload
    _refused(_verify(bundle, keys[1]), "in-toto statement", "bound")
    _refused(_verify(_archive(bundle, tmp_path), keys[1]), "in-toto statement", "bound")


def test_an_envelope_past_its_bound_is_refused_in_both_forms(signed, keys, tmp_path) -> None:
    bundle = _copy(signed, tmp_path)
    _pad_statement(bundle, keys[0], MAX_ENVELOPE_BYTES)  # its base64 is larger still
    _refused(_verify(bundle, keys[1]), SIGNED_NAME, "bound for a DSSE envelope", "unread")
    _refused(_verify(_archive(bundle, tmp_path), keys[1]), SIGNED_NAME, "unread")


def test_an_attestation_past_its_bound_is_never_read(signed, keys, tmp_path) -> None:
    """A 64 GiB sparse attestation: refused from its size; reading it would never end."""
    bundle = _copy(signed, tmp_path)
    with open(bundle / SIGNED_NAME, "r+b") as fh:
        fh.truncate(64 << 30)
    _refused(_verify(bundle, keys[1]), SIGNED_NAME, str(64 << 30), "unread")


def test_a_statement_of_tiny_objects_is_refused_by_its_parse_bound(signed, keys,
                                                                  tmp_path) -> None:
    """Under the byte bound, but 4 MiB of `{}` would parse into ~100 MB of objects."""
    bundle = _copy(signed, tmp_path)
    st = _statement(bundle)
    st["predicate"]["buildDefinition"]["externalParameters"]["parameters"]["pad"] = \
        [{}] * ((4 << 20) // 3)
    _resign(bundle, keys[0], st)
    report = verify_bundle(str(bundle), keys[1])
    assert report.failed is not None and report.failed.number == 3
    assert "in memory once parsed" in report.failed.details[0]


# ---- the other documents -------------------------------------------------------------------------
def test_a_document_past_its_byte_bound_is_refused_unread(signed, keys, tmp_path) -> None:
    bundle = _copy(signed, tmp_path)
    doc = json.loads((bundle / SBOM_NAME).read_text())
    doc["pad"] = "x" * MAX_DOCUMENT_BYTES
    _replace(bundle, keys[0], SBOM_NAME, json.dumps(doc).encode())
    _refused(_verify(bundle, keys[1]), SBOM_NAME, "bound for a bundle document", "unread")


def test_a_document_whose_text_widens_past_its_memory_bound_is_refused(signed, keys,
                                                                       tmp_path) -> None:
    """11 MiB of ASCII and one emoji: each character then takes 4 bytes once decoded, parsed
    twice over (the validator's and verify's own), and the emoji is `\\ud83d\\ude00` in the
    text, so the width shows only in the escapes."""
    bundle = _copy(signed, tmp_path)
    doc = json.loads((bundle / SBOM_NAME).read_text())
    doc["pad"] = "\U0001F600" + "x" * (11 << 20)
    data = json.dumps(doc).encode()
    assert len(data) < MAX_DOCUMENT_BYTES and data.isascii()
    _replace(bundle, keys[0], SBOM_NAME, data)
    _refused(_verify(bundle, keys[1]), SBOM_NAME,
             f"over the {MAX_DOCUMENT_MEMORY >> 20} MiB bound for a bundle document")


def test_a_big_json_result_is_still_verified(signed, keys, tmp_path) -> None:
    """Results are the payload, not bounded like documents: a 25 MB JSON result verifies."""
    bundle = _copy(signed, tmp_path)
    doc = {"metric": "top1_agreement", "per_position": [0.123456789012] * (3 << 20 >> 1)}
    _replace(bundle, keys[0], "results/agreement.json", json.dumps(doc).encode())
    report = verify_bundle(str(bundle), keys[1])
    assert report.failed is None, report.to_json()


# ---- publish holds itself to the same bounds -----------------------------------------------
def test_publish_refuses_a_statement_verify_would_refuse(tmp_path, keys) -> None:
    result = tmp_path / "r.json"
    result.write_text("{}")
    with pytest.raises(BoundError, match="in-toto statement"):
        publish([result], sample_subject(), tmp_path / "b", key_path=keys[0],
                parameters={"note": "x" * MAX_STATEMENT_BYTES}, allow_unrecorded=True)
    assert not (tmp_path / "b").exists()


# ---- data after the tar's end ----------------------------------------------------------------------
def _gnu_tar_lists(archive: Path, *flags: str) -> list[str]:
    out = subprocess.run(["tar", *flags, "-tzf", str(archive)], capture_output=True,
                         text=True, check=True)
    return out.stdout.split()


def _tar_of(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


@pytest.mark.skipif(shutil.which("tar") is None, reason="GNU tar not installed")
def test_a_second_gzip_member_after_the_bundle_s_end_is_refused(signed, keys,
                                                               tmp_path) -> None:
    archive = _archive(_copy(signed, tmp_path), tmp_path)
    assert verify_bundle(str(archive), keys[1]).failed is None
    with open(archive, "ab") as fh:
        fh.write(gzip.compress(_tar_of({"results/evil.sh": b"#!/bin/sh\nrm -rf ~\n"})))
    assert "results/evil.sh" not in _gnu_tar_lists(archive)
    assert "results/evil.sh" in _gnu_tar_lists(archive, "-i")  # what a user extracting sees
    proc = _verify(archive, keys[1])
    assert proc.returncode == 1 and "FAILED at step 1" in proc.stdout, proc.stdout
    assert "end-of-archive" in proc.stdout and "tar -i" in proc.stdout


def test_members_after_the_zero_blocks_inside_one_gzip_member_are_refused(signed, keys,
                                                                         tmp_path) -> None:
    archive = _archive(_copy(signed, tmp_path), tmp_path)
    stream = gzip.decompress(archive.read_bytes())
    hidden = _tar_of({"results/evil.sh": b"x"})
    archive.write_bytes(gzip.compress(stream + hidden, mtime=0))
    report = verify_bundle(str(archive), keys[1])
    assert report.failed is not None and report.failed.number == 1
    assert "end-of-archive" in report.failed.details[0]


def test_nul_padding_after_the_end_is_not_data(signed, keys, tmp_path) -> None:
    archive = _archive(_copy(signed, tmp_path), tmp_path)
    stream = gzip.decompress(archive.read_bytes())
    archive.write_bytes(gzip.compress(stream + bytes(1 << 16), mtime=0) + bytes(64))
    assert verify_bundle(str(archive), keys[1]).failed is None


def test_a_directory_bundle_of_too_many_files_is_refused(signed, keys, tmp_path) -> None:
    from provenance.publish.bounds import MAX_MEMBERS

    bundle = _copy(signed, tmp_path)
    junk = bundle / "results" / "junk"
    junk.mkdir()
    for i in range(MAX_MEMBERS + 1):
        (junk / str(i)).touch()
    report = verify_bundle(str(bundle), keys[1])
    assert report.failed is not None and report.failed.number == 1
    assert f"more than {MAX_MEMBERS} files" in report.failed.details[0]
    assert os.path.exists(junk)
