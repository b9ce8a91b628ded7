"""prov publish / keygen / verify: DSSE PAE, signed and unsigned bundles, tamper tests at
the right step, another key, KL disclosure cards, deterministic archives, golden statement."""

from __future__ import annotations

import base64
import json
import shutil

import pytest

from provenance.model.errors import ProvError
from provenance.model.kl import ITEMS
from provenance.publish.bundle import SBOM_NAME, SIGNED_NAME, UNSIGNED_NAME, publish
from provenance.publish.dsse import pae
from provenance.publish.keys import generate
from provenance.publish.verify import verify_bundle
from tests.golden import check_golden
from tests.provenance.sbom.helpers_sbom import prov, sample_manifest, sample_subject


def test_pae_matches_the_dsse_spec_vector():
    # protocol.md's test vector.
    assert pae("http://example.com/HelloWorld", b"hello world") == (
        b"DSSEv1 29 http://example.com/HelloWorld 11 hello world")
    assert pae("t", b"") == b"DSSEv1 1 t 0 "
    assert pae("ü", b"x") == "DSSEv1 2 ü 1 x".encode()  # byte lengths, not characters


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    d = tmp_path_factory.mktemp("keys")
    _, pub, _ = generate(d / "signer")
    _, other_pub, _ = generate(d / "other")
    return d / "signer.key", pub, other_pub


def _results(tmp_path):
    r1 = tmp_path / "agreement.json"
    r1.write_text(json.dumps({"metric": "top1_agreement", "value": 0.931}))
    r2 = tmp_path / "divergence.csv"
    r2.write_text("position,kl\n0,0.0\n1,0.002\n")
    return [r1, r2]


def kl_card(manifest_digest: str) -> dict:
    return {
        "reference_checkpoint": {"name": "bf16", "digest": "sha256:" + "a1" * 32},
        "runtime_environment": {"manifest_digest": manifest_digest},
        "evaluation_text": {"digest": "sha256:" + "b2" * 32, "source": "agentic trace v3"},
        "calibration_data": {"none": "bf16 weights, nothing quantized"},
        "context_lengths": [4096, 32768],
        "sampled_positions": {"count": 98304, "rule": "every generated token of the trace"},
        "kl_direction": "KL(ref||cand)",
        "vocabulary_truncation": {"mode": "full", "size": 151936},
        "aggregation": {"method": "mean over positions, then mean over prompts"},
    }


def _verdict(report):
    failed = report.failed
    return failed.number if failed else None


@pytest.fixture
def signed_bundle(tmp_path, keys):
    key, pub, _ = keys
    out = tmp_path / "bundle"
    publish(_results(tmp_path), sample_subject(), out, key_path=key,
            parameters={"model": "qwen3-8b", "attention_backend": "FLASH_ATTN"},
            dependencies={"weights": "sha256:" + "c3" * 32}, allow_unrecorded=True)
    return out, pub


def test_signed_bundle_verifies(signed_bundle):
    out, pub = signed_bundle
    report = verify_bundle(str(out), pub)
    assert _verdict(report) is None, report.to_json()
    assert [s.verdict for s in report.steps] == ["pass"] * 7 + ["skipped"] * 2  # no exchanges or model
    assert (out / SIGNED_NAME).exists() and (out / "runs" / "r-20261101-0001.json").exists()
    env = json.loads((out / SIGNED_NAME).read_text())
    statement = json.loads(base64.b64decode(env["payload"]))
    assert [s["name"] for s in statement["subject"]] == ["results/agreement.json",
                                                         "results/divergence.csv"]
    predicate = statement["predicate"]
    assert predicate["buildDefinition"]["externalParameters"]["parameters"]["model"] == "qwen3-8b"
    assert "sk-live-abcdefghijklmnop" not in json.dumps(statement)
    deps = {d["name"] for d in predicate["buildDefinition"]["resolvedDependencies"]}
    assert deps == {"manifest", "image", "weights"}
    assert predicate["runDetails"]["metadata"]["invocationId"] == "r-20261101-0001"


def _flip(path, offset=None):
    data = bytearray(path.read_bytes())
    i = len(data) // 2 if offset is None else offset
    data[i] ^= 0x01
    path.write_bytes(bytes(data))


def _edit_statement(out, fn):
    env = json.loads((out / SIGNED_NAME).read_text())
    payload = bytearray(base64.b64decode(env["payload"]))
    fn(payload)
    env["payload"] = base64.b64encode(bytes(payload)).decode()
    (out / SIGNED_NAME).write_text(json.dumps(env))


@pytest.mark.parametrize(
    ("tamper", "step"),
    [
        ("result", 4),
        ("statement", 2),
        ("sbom", 4),  # every byproduct is re-hashed at step 4 (the closed world)
        ("signature", 2),
        ("manifest", 4),
        ("run-record", 4),
        ("extra-result", 4),
        ("envelope-type", 2),
    ],
)
def test_tampering_fails_at_the_right_step(signed_bundle, tamper, step):
    out, pub = signed_bundle
    if tamper == "result":
        _flip(out / "results" / "divergence.csv")
    elif tamper == "statement":
        _edit_statement(out, lambda p: p.__setitem__(len(p) // 2, p[len(p) // 2] ^ 0x01))
    elif tamper == "sbom":
        _flip(out / SBOM_NAME)
    elif tamper == "signature":
        env = json.loads((out / SIGNED_NAME).read_text())
        sig = bytearray(base64.b64decode(env["signatures"][0]["sig"]))
        sig[0] ^= 0x01
        env["signatures"][0]["sig"] = base64.b64encode(bytes(sig)).decode()
        (out / SIGNED_NAME).write_text(json.dumps(env))
    elif tamper == "manifest":
        _flip(next((out / "manifests").iterdir()))
    elif tamper == "run-record":
        _flip(out / "runs" / "r-20261101-0001.json")
    elif tamper == "extra-result":
        (out / "results" / "smuggled.json").write_text("{}")
    elif tamper == "envelope-type":
        env = json.loads((out / SIGNED_NAME).read_text())
        env["payloadType"] = "application/json"
        (out / SIGNED_NAME).write_text(json.dumps(env))
    report = verify_bundle(str(out), pub)
    assert _verdict(report) == step, report.to_json()
    # Every step before the failed one passed; the ones after were not run.
    assert all(s.verdict == "pass" for s in report.steps[: step - 1])
    assert all(s.verdict == "skipped" for s in report.steps[step:])


def test_other_key_fails_at_signature_step(signed_bundle, keys):
    out, _ = signed_bundle
    report = verify_bundle(str(out), keys[2])
    assert _verdict(report) == 2 and "no signature verifies" in report.steps[1].details[0]


def test_cli_verify_exit_codes_and_named_step(signed_bundle, keys):
    out, pub = signed_bundle
    ok = prov("verify", str(out), "--key", str(pub))
    assert ok.returncode == 0 and "bundle verified" in ok.stdout
    _flip(out / SBOM_NAME)
    bad = prov("verify", str(out), "--key", str(pub))
    assert bad.returncode == 1
    assert "verification FAILED at step 4 (subjects re-hashed)" in bad.stdout
    as_json = json.loads(prov("verify", str(out), "--key", str(pub), "--json").stdout)
    assert as_json["verified"] is False and as_json["failed_step"] == 4


def test_unsigned_bundle_says_so_and_tamper_still_caught(tmp_path, keys):
    out = tmp_path / "b.tar.gz"
    publish(_results(tmp_path), sample_subject(), out, allow_unrecorded=True)
    assert _verdict(verify_bundle(str(out))) == 2  # no trusted key: not verified
    report = verify_bundle(str(out), no_signature=True)
    assert _verdict(report) is None
    assert report.steps[1].verdict == "warn" and "UNSIGNED" in report.steps[1].details[0]
    assert _verdict(verify_bundle(str(out), keys[1])) == 2  # a key demands a signature
    # The same inputs give the same archive bytes.
    again = tmp_path / "again.tar.gz"
    publish(_results(tmp_path), sample_subject(), again, allow_unrecorded=True)
    assert again.read_bytes() == out.read_bytes()
    # Tamper with the bare statement inside a directory bundle: caught at the subject step.
    d = tmp_path / "dir"
    publish(_results(tmp_path), sample_subject(), d, allow_unrecorded=True)
    text = (d / UNSIGNED_NAME).read_text()
    digest = json.loads(text)["subject"][0]["digest"]["sha256"]
    flipped = digest[:-1] + ("0" if digest[-1] != "0" else "1")
    (d / UNSIGNED_NAME).write_text(text.replace(digest, flipped))
    assert _verdict(verify_bundle(str(d), no_signature=True)) == 4
    (d / UNSIGNED_NAME).write_text(text.replace("Statement/v1", "Statement/v0"))
    assert _verdict(verify_bundle(str(d), no_signature=True)) == 3


def test_golden_statement(tmp_path):
    out = tmp_path / "b"
    publish(_results(tmp_path), sample_subject(), out, parameters={"model": "qwen3-8b"},
            allow_unrecorded=True)
    check_golden("publish/sample-statement.intoto.json", (out / UNSIGNED_NAME).read_text())


def test_kl_result_without_full_card_is_refused_with_missing_items(tmp_path):
    digest = sample_manifest().digest()
    card = kl_card(digest)
    for item in ("calibration_data", "kl_direction", "aggregation"):
        del card[item]
    card["evaluation_text"] = {"source": "trace"}  # no digest
    res = tmp_path / "kl.json"
    res.write_text(json.dumps({"kl_divergence": 0.0123, "kl_disclosure": card}))
    with pytest.raises(ProvError) as err:
        publish([res], sample_subject(), tmp_path / "b", allow_unrecorded=True)
    msg = str(err.value)
    for item in ("calibration_data (missing)", "kl_direction (missing)", "aggregation (missing)",
                 "evaluation_text (needs digest, source; missing digest)"):
        assert item in msg
    assert "reference_checkpoint" not in msg and not (tmp_path / "b").exists()
    # No card at all: all nine items are listed.
    res.write_text(json.dumps({"metrics": {"kl_mean": 0.01}}))
    with pytest.raises(ProvError) as err:
        publish([res], sample_subject(), tmp_path / "b", allow_unrecorded=True)
    assert all(item in str(err.value) for item in ITEMS)
    # A card about another environment is refused too.
    other = kl_card("sha256:" + "0" * 64)
    res.write_text(json.dumps({"kl_divergence": 0.01, "kl_disclosure": other}))
    with pytest.raises(ProvError, match="is not the published run's manifest"):
        publish([res], sample_subject(), tmp_path / "b", allow_unrecorded=True)


def test_kl_result_with_full_card_travels_and_is_printed(tmp_path, keys):
    key, pub, _ = keys
    res = tmp_path / "kl.json"
    res.write_text(json.dumps({"metric": "kl_divergence", "value": 0.0123,
                               "kl_disclosure": kl_card(sample_manifest().digest())}))
    out = tmp_path / "b"
    publish([res], sample_subject(), out, key_path=key, allow_unrecorded=True)
    assert (out / "disclosures" / "kl.json.kl-card.json").exists()
    r = prov("verify", str(out), "--key", str(pub))
    assert r.returncode == 0, r.stdout
    assert "KL disclosure for results/kl.json" in r.stdout and "KL(ref||cand)" in r.stdout
    # Removing the card from the bundle: a listed file is missing (step 4, the closed world).
    shutil.rmtree(out / "disclosures")
    assert _verdict(verify_bundle(str(out), pub)) == 4


def test_cli_publish_keygen_and_errors(tmp_path):
    mpath = tmp_path / "m.json"
    sample_manifest().write(mpath, fmt="json")
    r = prov("keygen", "-o", str(tmp_path / "k"))
    assert r.returncode == 0 and (tmp_path / "k.key").stat().st_mode & 0o777 == 0o600
    assert prov("keygen", "-o", str(tmp_path / "k")).returncode == 2  # no overwrite
    res = _results(tmp_path)
    out = tmp_path / "bundle.tar.gz"
    r = prov("publish", *map(str, res), "--manifest", str(mpath), "--key",
             str(tmp_path / "k.key"), "--out", str(out), "--param", "model=m")
    assert r.returncode == 0, r.stderr
    assert "signed with sha256:" in r.stderr
    assert prov("verify", str(out), "--key", str(tmp_path / "k.pub")).returncode == 0
    again = prov("publish", *map(str, res), "--manifest", str(mpath), "--out", str(out))
    assert again.returncode == 2 and "exists" in again.stderr
    norun = prov("publish", str(res[0]), "--run", "r-1", "--out", str(tmp_path / "x"),
                 env={"PROV_STORE": str(tmp_path / "store")})
    assert norun.returncode == 2 and norun.stderr.startswith("prov: error: --run r-1: ")
    missing = prov("publish", str(tmp_path / "nope.json"), "--manifest", str(mpath), "--out",
                   str(tmp_path / "y"))
    assert missing.returncode == 2 and "no such result file" in missing.stderr
    assert not (tmp_path / "y").exists()
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]
    assert leftovers == []
    garbage = tmp_path / "garbage.tar.gz"
    garbage.write_bytes(b"not a tarball")
    g = prov("verify", str(garbage))
    assert g.returncode == 1 and "FAILED at step 1" in g.stdout


def test_publish_a_real_run_from_the_store(tmp_path, keys):
    """`prov exec` records a run in a fresh store; publish --run and sbom --run read it."""
    import os
    import subprocess

    from tests.provenance.sbom.helpers_sbom import PROV

    key, pub, _ = keys
    env = {**os.environ, "PROV_STORE": str(tmp_path / "store")}
    script = "open('out.json', 'w').write('{\"metric\": \"top1_agreement\", \"value\": 0.9}')"
    subprocess.run([*PROV, "exec", "-q", "-o", "out.json", "-p", "model=tiny", "--",
                    "python3", "-c", script], cwd=tmp_path, env=env, check=True, timeout=300)
    runs = json.loads(subprocess.run([*PROV, "runs", "--json"], cwd=tmp_path, env=env,
                                     check=True, capture_output=True, text=True).stdout)
    run_id = (runs if isinstance(runs, list) else runs["runs"])[0]["run_id"]
    out = tmp_path / "bundle"
    r = subprocess.run([*PROV, "publish", "out.json", "--run", run_id[:8], "--key", str(key),
                        "--out", str(out)], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert (out / "runs" / f"{run_id}.json").exists()
    report = verify_bundle(str(out), pub)
    assert report.failed is None, report.to_json()
    statement = json.loads(base64.b64decode(json.loads((out / SIGNED_NAME).read_text())["payload"]))
    assert statement["subject"][0]["annotations"] == {"runOutput": "out.json"}
    ext = statement["predicate"]["buildDefinition"]["externalParameters"]
    assert ext["command"][:2] == ["python3", "-c"] and ext["runParameters"] == {"model": "tiny"}
    assert statement["predicate"]["runDetails"]["metadata"]["invocationId"] == run_id
    sbom = subprocess.run([*PROV, "sbom", "--run", run_id], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    doc = json.loads(sbom.stdout)
    assert doc["formulation"][0]["workflows"][0]["uid"] == run_id


def test_golden_verify_report(tmp_path):
    out = tmp_path / "b"
    publish(_results(tmp_path), sample_subject(), out, parameters={"model": "qwen3-8b"},
            allow_unrecorded=True)
    r = prov("verify", str(out), "--json", "--no-signature")
    assert r.returncode == 0, r.stdout
    check_golden("publish/sample-verify.json", r.stdout.replace(str(out), "BUNDLE"))
