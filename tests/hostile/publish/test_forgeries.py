"""Forged bundles (issue #19 section 5, #18 item 7): each is refused at a named step, exit 1.

Every forgery is built in code from a real signed bundle; "re-signed" ones are signed again
with the RIGHT key, so only the verifier's consistency checks can catch them.
"""

from __future__ import annotations

import base64
import gzip
import io
import json
import os
import resource
import subprocess
import sys
import tarfile

import pytest

from provenance.publish.archive import write_tar_gz
from provenance.publish.bundle import SBOM_NAME, SIGNED_NAME, UNSIGNED_NAME, publish
from provenance.publish.dsse import sign
from provenance.publish.keys import generate, load_private
from provenance.publish.verify import NOT_AUTHENTICATED, verify_bundle
from tests.provenance.sbom.helpers_sbom import PROV, sample_subject

TIMEOUT = 120


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    d = tmp_path_factory.mktemp("keys")
    priv, pub, _ = generate(d / "signer")
    return priv, pub


def results(tmp_path):
    r = tmp_path / "agreement.json"
    r.write_text(json.dumps({"metric": "top1_agreement", "value": 0.931}))
    return [r]


@pytest.fixture
def bundle(tmp_path, keys):
    out = tmp_path / "bundle"
    publish(results(tmp_path), sample_subject(), out, key_path=keys[0], allow_unrecorded=True)
    return out


def statement_of(out):
    env = json.loads((out / SIGNED_NAME).read_text())
    return json.loads(base64.b64decode(env["payload"]))


def resign(out, key, statement):
    payload = (json.dumps(statement, indent=2, sort_keys=True) + "\n").encode()
    (out / SIGNED_NAME).write_text(json.dumps(sign(payload, load_private(key))))


def failed_at(out, pub, **kw):
    report = verify_bundle(str(out), pub, **kw)
    return report.failed.number if report.failed else None


def put_envelope(out, mutate):
    env = json.loads((out / SIGNED_NAME).read_text())
    text = mutate(env)
    (out / SIGNED_NAME).write_text(text if isinstance(text, str) else json.dumps(env))


# ---- extra, missing and odd files: the closed world ---------------------------------------
@pytest.mark.parametrize("rel,step", [
    ("EVIL.sh", 4), ("runs/" + "f" * 16 + ".json", 4), ("manifests/" + "f" * 64 + ".json", 4),
    (UNSIGNED_NAME, 1), ("results/smuggled.json", 4), ("disclosures/x.kl-card.json", 4),
])
def test_unlisted_files_are_refused(bundle, keys, rel, step):
    (bundle / rel).parent.mkdir(parents=True, exist_ok=True)
    (bundle / rel).write_text('{"x": 1}')
    assert failed_at(bundle, keys[1]) == step


def test_a_symlink_in_a_directory_bundle_is_refused(bundle, keys):
    target = bundle / "results" / "agreement.json"
    moved = bundle.parent / "elsewhere.json"
    target.rename(moved)
    target.symlink_to(moved)
    report = verify_bundle(str(bundle), keys[1])
    assert report.failed.number == 1 and "symlink" in report.failed.details[0]


def test_a_fifo_in_a_directory_bundle_is_refused_without_hanging(bundle, keys):
    os.mkfifo(bundle / "results" / "pipe")
    assert failed_at(bundle, keys[1]) == 1


# ---- envelope malleation (same signed payload) --------------------------------------------
def _urlsafe(env):
    raw = base64.b64decode(env["payload"])
    # A payload whose standard base64 has + or /, so the URL-safe spelling differs.
    env["payload"] = base64.urlsafe_b64encode(raw).decode()
    assert env["payload"] != base64.b64encode(raw).decode()


def _duplicate_payload(env):
    evil = dict(statement_of_env(env))
    evil["predicate"]["buildDefinition"]["externalParameters"]["command"] = ["rm", "-rf", "/"]
    evil_b64 = base64.b64encode(json.dumps(evil).encode()).decode()
    body = json.dumps({k: v for k, v in env.items() if k != "payload"})
    return f'{{"payload": "{evil_b64}", "payload": "{env["payload"]}", {body[1:]}'


def statement_of_env(env):
    return json.loads(base64.b64decode(env["payload"]))


MALLEATIONS = {
    "changed keyid": lambda e: e["signatures"][0].__setitem__("keyid", "sha256:" + "0" * 64),
    "url-safe base64": _urlsafe,
    "junk in base64": lambda e: e.__setitem__("payload", e["payload"][:8] + "\n" +
                                              e["payload"][8:]),
    "padding changed": lambda e: e.__setitem__("payload", e["payload"].rstrip("=")
                                                if e["payload"].endswith("=")
                                                else e["payload"] + "=="),
    "extra field": lambda e: e.__setitem__("note", "hello"),
    "extra signature field": lambda e: e["signatures"][0].__setitem__("cert", "x"),
    "duplicate payload, evil first": _duplicate_payload,
}


@pytest.mark.parametrize("name", sorted(MALLEATIONS))
def test_envelope_malleation_is_refused(tmp_path, keys, name):
    out = tmp_path / "b"
    # A parameter that makes the payload's base64 contain '+' or '/' (for the URL-safe case).
    publish(results(tmp_path), sample_subject(), out, key_path=keys[0], allow_unrecorded=True,
            parameters={"blob": "\xfb\xff\xfe" * 20})
    put_envelope(out, MALLEATIONS[name])
    assert failed_at(out, keys[1]) == 2


# ---- re-signed with the right key: consistency checks ------------------------------------
def _command(st):
    st["predicate"]["buildDefinition"]["externalParameters"]["command"] = ["rm", "-rf", "/"]


def _invocation(st):
    st["predicate"]["runDetails"]["metadata"]["invocationId"] = "r-other"


def _params(st):
    st["predicate"]["buildDefinition"]["externalParameters"]["runParameters"] = {"x": "1"}


def _times(st):
    st["predicate"]["runDetails"]["metadata"]["startedOn"] = "2020-01-01T00:00:00Z"


def _run_output(st):
    st["subject"][0]["annotations"] = {"runOutput": "out/kl.json"}


def _manifest_identity(st):
    dep = st["predicate"]["buildDefinition"]["resolvedDependencies"][0]
    dep["annotations"]["identityDigest"] = "sha256:" + "0" * 64


RESIGNED = {"command changed": _command, "invocation id": _invocation,
            "run parameters": _params, "start time": _times,
            "subject claims a run output": _run_output,
            "manifest identity": _manifest_identity}


@pytest.mark.parametrize("name", sorted(RESIGNED))
def test_resigned_statement_edits_are_caught_against_the_run_record(bundle, keys, name):
    st = statement_of(bundle)
    RESIGNED[name](st)
    resign(bundle, keys[0], st)
    assert failed_at(bundle, keys[1]) == 5


def _edit_sbom_and_resign(bundle, key, edit):
    import hashlib

    doc = json.loads((bundle / SBOM_NAME).read_text())
    edit(doc)
    data = json.dumps(doc, indent=2).encode()
    (bundle / SBOM_NAME).write_bytes(data)
    st = statement_of(bundle)
    for b in st["predicate"]["runDetails"]["byproducts"]:
        if b["name"] == SBOM_NAME:
            b["digest"]["sha256"] = hashlib.sha256(data).hexdigest()
    resign(bundle, key, st)


def _deb_version(doc):
    deb = next(c for c in doc["components"] if c.get("purl", "").startswith("pkg:deb/"))
    deb["version"] = "9.9.9"
    deb["purl"] = deb["purl"].replace(deb["purl"].split("@")[1].split("?")[0], "9.9.9")
    deb["bom-ref"] = deb["purl"]


def _deb_removed(doc):
    doc["components"] = [c for c in doc["components"] if not c.get("purl", "").startswith("pkg:deb/")]


def _deb_property(doc):
    deb = next(c for c in doc["components"] if c.get("purl", "").startswith("pkg:deb/"))
    deb["properties"].append({"name": "prov:layer", "value": "sha256:" + "e" * 64})


@pytest.mark.parametrize("edit", [_deb_version, _deb_removed, _deb_property],
                         ids=["debian version", "debian removed", "debian property"])
def test_resigned_sbom_edits_to_debian_components_are_caught(bundle, keys, edit):
    _edit_sbom_and_resign(bundle, keys[0], edit)
    report = verify_bundle(str(bundle), keys[1])
    assert report.failed.number == 6, report.to_json()


# ---- without a trusted key ----------------------------------------------------------------
def test_without_a_key_verification_fails_unless_no_signature(bundle, keys, tmp_path):
    st = statement_of(bundle)
    other, _, _ = generate(tmp_path / "mallory")
    resign(bundle, other, st)  # re-signed by anyone
    assert failed_at(bundle, None) == 2
    r = subprocess.run([*PROV, "verify", str(bundle)], capture_output=True, text=True,
                       timeout=TIMEOUT)
    assert r.returncode == 1 and "--no-signature" in r.stdout
    r = subprocess.run([*PROV, "verify", str(bundle), "--no-signature"], capture_output=True,
                       text=True, timeout=TIMEOUT)
    assert r.returncode == 0
    assert r.stdout.splitlines()[0] == NOT_AUTHENTICATED  # the FIRST line says so
    doc = json.loads(subprocess.run([*PROV, "verify", str(bundle), "--no-signature",
                                     "--json"], capture_output=True, text=True,
                                    timeout=TIMEOUT).stdout)
    assert doc["verified"] is True and doc["authenticity_checked"] is False


def test_unsigned_rewritten_statement_fails_without_no_signature(tmp_path):
    out = tmp_path / "u"
    publish(results(tmp_path), sample_subject(), out, allow_unrecorded=True)
    st = json.loads((out / UNSIGNED_NAME).read_text())
    _command(st)
    (out / UNSIGNED_NAME).write_text(json.dumps(st))
    assert failed_at(out, None) == 2
    assert failed_at(out, None, no_signature=True) == 5  # and the contents disagree


def test_verify_key_must_be_public(bundle, keys):
    r = subprocess.run([*PROV, "verify", str(bundle), "--key", str(keys[0])],
                       capture_output=True, text=True, timeout=TIMEOUT)
    assert r.returncode == 2 and "PRIVATE key" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


# ---- archives: bounds, CRC, deflate errors ------------------------------------------------
def _archive_with(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return gzip.compress(buf.getvalue(), mtime=0)


def test_a_2gib_member_in_a_small_archive_is_refused_at_its_header(tmp_path):
    """The member is real (2 GiB of zeros compress to ~2 MB); the verifier refuses it from
    its header and never unpacks it: bounded memory, and fast."""
    path = tmp_path / "bomb.tar.gz"
    size = 2 << 30
    info = tarfile.TarInfo("results/huge.bin")
    info.size = size
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
        gz.write(info.tobuf(tarfile.PAX_FORMAT))
        zeros = bytes(1 << 20)
        for _ in range(size >> 20):
            gz.write(zeros)
        gz.write(bytes(1024))
    assert path.stat().st_size < 4 << 20
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss across exec from the (large) pytest parent
    code = ("import sys\nfrom provenance.cli import main\nsys.argv=['prov','verify',"
            f"{str(path)!r},'--no-signature']\ntry:\n    main()\nexcept SystemExit as e:\n"
            "    hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')]\n"
            "    print('RSS', hwm[0].split()[1], e.code)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=TIMEOUT)
    rss_kib, exit_code = map(int, r.stdout.split("RSS")[1].split())
    assert exit_code == 1 and "FAILED at step 1" in r.stdout and "over the" in r.stdout
    assert rss_kib < 256 * 1024  # prov's own peak, far from the 2 GiB member
    assert resource.getrusage(resource.RUSAGE_SELF)  # (the test itself read nothing big)


def _real_archive(tmp_path, keys):
    d = tmp_path / "dir"
    publish(results(tmp_path), sample_subject(), d, key_path=keys[0], allow_unrecorded=True)
    out = tmp_path / "b.tar.gz"
    write_tar_gz(d, out)
    return out


def test_gzip_crc_and_deflate_errors_are_step_1_failures(tmp_path, keys):
    out = _real_archive(tmp_path, keys)
    data = bytearray(out.read_bytes())
    crc = bytearray(data)
    crc[-8] ^= 0xFF  # the CRC-32 in the gzip trailer
    (tmp_path / "crc.tar.gz").write_bytes(crc)
    report = verify_bundle(str(tmp_path / "crc.tar.gz"), keys[1])
    assert report.failed.number == 1 and "CRC" in report.failed.details[0]
    broken = bytearray(data)
    broken[len(data) // 2:len(data) // 2 + 8] = b"\xff" * 8  # deflate stream garbage
    (tmp_path / "deflate.tar.gz").write_bytes(broken)
    r = subprocess.run([*PROV, "verify", str(tmp_path / "deflate.tar.gz"), "--key",
                        str(keys[1])], capture_output=True, text=True, timeout=TIMEOUT)
    assert r.returncode == 1 and "FAILED at step 1" in r.stdout and "internal" not in r.stderr


@pytest.mark.parametrize("kind", ["symlink", "hardlink", "fifo", "absolute", "dotdot",
                                  "duplicate", "device"])
def test_odd_archive_members_are_refused(tmp_path, kind):
    def info(name, type_=tarfile.REGTYPE, size=0, link=""):
        t = tarfile.TarInfo(name)
        t.type, t.size, t.linkname = type_, size, link
        return t
    members = {
        "symlink": [(info("results/x", tarfile.SYMTYPE, link="/etc/passwd"), None)],
        "hardlink": [(info("results/x", tarfile.LNKTYPE, link="/etc/passwd"), None)],
        "fifo": [(info("results/x", tarfile.FIFOTYPE), None)],
        "device": [(info("results/x", tarfile.CHRTYPE), None)],
        "absolute": [(info("/tmp/evil", size=1), b"x")],
        "dotdot": [(info("../evil", size=1), b"x")],
        "duplicate": [(info("a", size=1), b"x"), (info("a", size=1), b"y")],
    }[kind]
    path = tmp_path / "odd.tar.gz"
    path.write_bytes(_archive_with(members))
    report = verify_bundle(str(path), None)
    assert report.failed.number == 1, report.to_json()
    assert not (tmp_path.parent / "evil").exists() and not os.path.exists("/tmp/evil")


def _header_with_size_field(name: str, size_field: bytes) -> bytes:
    info = tarfile.TarInfo(name)
    info.size = 0
    raw = bytearray(info.tobuf(tarfile.USTAR_FORMAT))
    raw[124:136] = size_field.ljust(12, b"\0")[:12]
    raw[148:156] = b" " * 8
    raw[148:155] = b"%06o\0" % sum(raw)
    return bytes(raw)


@pytest.mark.parametrize("field", [b"-0000002000", b"\xff" + b"\xff" * 11])
def test_a_negative_member_size_is_refused_not_looped(tmp_path, field):
    path = tmp_path / "neg.tar.gz"
    body = _header_with_size_field("results/x", field) + bytes(4096)
    path.write_bytes(gzip.compress(body, mtime=0))
    r = subprocess.run([*PROV, "verify", str(path), "--no-signature"], capture_output=True,
                       text=True, timeout=TIMEOUT)
    assert r.returncode == 1 and "FAILED at step 1" in r.stdout, r.stdout + r.stderr


def test_a_resigned_kl_card_that_differs_from_its_result_is_caught(tmp_path, keys):
    import hashlib

    from tests.provenance.publish.test_publish import kl_card
    from tests.provenance.sbom.helpers_sbom import sample_manifest

    card = kl_card(sample_manifest().digest())
    res = tmp_path / "kl.json"
    res.write_text(json.dumps({"metric": "kl_divergence", "value": 0.01, "kl_disclosure": card}))
    out = tmp_path / "b"
    publish([res], sample_subject(), out, key_path=keys[0], allow_unrecorded=True)
    assert failed_at(out, keys[1]) is None
    rel = "disclosures/kl.json.kl-card.json"
    edited = dict(card, kl_direction="KL(cand||ref)")  # complete, but not the result's
    data = json.dumps(edited).encode()
    (out / rel).write_bytes(data)
    st = statement_of(out)
    for b in st["predicate"]["runDetails"]["byproducts"]:
        if b["name"] == rel:
            b["digest"]["sha256"] = hashlib.sha256(data).hexdigest()
    resign(out, keys[0], st)
    assert failed_at(out, keys[1]) == 7
