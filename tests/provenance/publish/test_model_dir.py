"""`prov verify --model DIR`: a model directory against a run's recorded digests and against
an OpenSSF model-signing signature made by the library itself (its EC key signer, offline)."""

# ruff: noqa: F811 - pytest fixtures imported from tests.exec_support
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.exec_support import (  # noqa: F401 - fixtures
    PYTHON,
    last_run,
    penv,
    prov,
    prov_cache,
)
from tests.runners.vllm_venv import CACHE

SIGN = """
import sys
from pathlib import Path
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
import model_signing
model, out, keys = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
key = ec.generate_private_key(ec.SECP256R1())
(keys / "signer.pem").write_bytes(key.private_bytes(
    serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
    serialization.NoEncryption()))
(keys / "signer.pub").write_bytes(key.public_key().public_bytes(
    serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
other = ec.generate_private_key(ec.SECP256R1()).public_key()
(keys / "other.pub").write_bytes(other.public_bytes(
    serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
model_signing.signing.Config().use_elliptic_key_signer(
    private_key=keys / "signer.pem").sign(model, out)
"""
VERIFY = """
import sys
from pathlib import Path
import model_signing
model_signing.verifying.Config().use_elliptic_key_verifier(
    public_key=Path(sys.argv[3])).verify(Path(sys.argv[1]), Path(sys.argv[2]))
"""


@pytest.fixture(scope="module")
def signing_python() -> Path:
    from tests.provenance.exec.probe.model_signing_venv import model_signing_python

    try:
        return model_signing_python()
    except subprocess.CalledProcessError as exc:
        pytest.skip(f"cannot build the model-signing venv (PyPI unreachable?): {exc}")


@pytest.fixture
def model_dir(tmp_path) -> Path:
    """A copy of the demo model (built by project code, cached) with a nested file."""
    from runners.demo.build import ensure

    out = tmp_path / "demo-model"
    shutil.copytree(ensure(CACHE / "demo-model", steps=120), out)
    (out / "extra").mkdir()
    (out / "extra" / "notes.txt").write_text("a nested file\n")
    return out


def library(py: Path, script: str, *args: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(py), "-c", script, *map(str, args)], capture_output=True,
                          text=True, timeout=300)


def verify(penv, *args) -> tuple[int, dict]:
    p = prov("verify", *map(str, args), "--json", env=penv)
    return p.returncode, json.loads(p.stdout) if p.returncode in (0, 1) else p.stderr.decode()


def flip_last_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x01  # same name, same size
    path.write_bytes(bytes(data))


def test_a_model_signing_signature_is_verified_and_an_edit_in_place_named(
        penv, tmp_path, model_dir, signing_python):
    sig = tmp_path / "model.sig"
    signed = library(signing_python, SIGN, model_dir, sig, tmp_path)
    assert signed.returncode == 0, signed.stderr
    assert library(signing_python, VERIFY, model_dir, sig, tmp_path / "signer.pub").returncode == 0
    rc, doc = verify(penv, "--model", model_dir, "--signature", sig, "--key",
                     tmp_path / "signer.pub")
    assert rc == 0 and doc["match"] is True, doc
    [check] = doc["checks"]
    assert check["signature"] == "verified" and "extra/notes.txt" in check["matched"]
    assert len(check["matched"]) == len(list(p for p in model_dir.rglob("*") if p.is_file()))
    rc, doc = verify(penv, "--model", model_dir, "--signature", sig, "--key",
                     tmp_path / "other.pub")
    assert rc == 1 and doc["checks"][0]["signature"].startswith("FAILED"), doc

    flip_last_byte(model_dir / "model.safetensors")
    theirs = library(signing_python, VERIFY, model_dir, sig, tmp_path / "signer.pub")
    assert theirs.returncode != 0 and "model.safetensors" in theirs.stderr  # the oracle agrees
    rc, doc = verify(penv, "--model", model_dir, "--signature", sig, "--key",
                     tmp_path / "signer.pub")
    assert rc == 1 and list(doc["checks"][0]["differing"]) == ["model.safetensors"]
    text = prov("verify", "--model", str(model_dir), "--signature", str(sig), "--no-signature",
                env=penv)
    assert text.returncode == 1
    assert "differs model.safetensors: expected sha256:" in " ".join(text.stdout.decode().split())
    assert "NOT checked" in text.stdout.decode()


def test_a_signature_inside_the_directory_is_skipped_and_a_new_file_is_named(
        penv, tmp_path, model_dir, signing_python):
    sig = model_dir / "model.sig"
    assert library(signing_python, SIGN, model_dir, sig, tmp_path).returncode == 0
    rc, doc = verify(penv, "--model", model_dir, "--signature", sig, "--key",
                     tmp_path / "signer.pub")
    assert rc == 0, doc
    (model_dir / "extra" / "added.txt").write_text("not signed\n")
    rc, doc = verify(penv, "--model", model_dir, "--signature", sig, "--key",
                     tmp_path / "signer.pub")
    assert rc == 1 and doc["checks"][0]["unlisted"] == ["extra/added.txt"]


def test_a_model_directory_against_the_digests_its_run_recorded(penv, tmp_path, model_dir):
    script = tmp_path / "load.py"
    script.write_text("import sys\nfrom transformers import AutoModelForCausalLM\n"
                      "AutoModelForCausalLM.from_pretrained(sys.argv[1])\n")
    p = prov("exec", "-q", "--", PYTHON, str(script), str(model_dir), env=penv, timeout=300)
    assert p.returncode == 0, p.stderr
    run = last_run(penv)["run_id"]
    recorded = last_run(penv)["facts"]["model"]["files"]
    rc, doc = verify(penv, "--model", model_dir, "--run", run)
    assert rc == 0 and sorted(doc["checks"][0]["matched"]) == sorted(recorded), doc
    flip_last_byte(model_dir / "tokenizer.json")
    rc, doc = verify(penv, "--model", model_dir, "--run", run[:12])
    assert rc == 1 and list(doc["checks"][0]["differing"]) == ["tokenizer.json"]
    (model_dir / "config.json").unlink()
    rc, doc = verify(penv, "--model", model_dir, "--run", run)
    assert rc == 1 and doc["checks"][0]["missing"] == ["config.json"]


@pytest.mark.parametrize("args, message", [
    (["--model", "{tmp}/nope", "--run", "x"], "not a directory"),
    (["--model", "{model}"], "needs --run RUN and/or --signature"),
    (["--run", "x"], "--run works only with --model"),
    (["--model", "{model}", "--signature", "{model}/config.json", "--no-signature"],
     "in-toto Statement v1"),
    (["--model", "{model}", "--signature", "{tmp}/absent.sig", "--no-signature"], "absent.sig"),
    (["--model", "{model}", "--signature", "{model}/config.json"], "--key PUBLIC.pem"),
])
def test_bad_input_is_one_line_and_exit_2(penv, tmp_path, model_dir, args, message):
    if "in-toto" in message:  # a JSON file that is not a signature: a bundle without envelope
        (model_dir / "config.json").write_text(json.dumps({"dsseEnvelope": {
            "payload": "e30=", "payloadType": "application/vnd.in-toto+json",
            "signatures": [{"sig": "AA=="}]}}))
    argv = [a.format(tmp=tmp_path, model=model_dir) for a in args]
    p = prov("verify", *argv, env=penv)
    err = p.stderr.decode()
    assert p.returncode == 2 and message in err and len(err.strip().splitlines()) == 1, err
