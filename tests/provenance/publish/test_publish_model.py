"""A bundle of a run that read a model: the SBOM's model component, the statement's model
dependencies (sha256 and a BOM-Link into the SBOM), and `prov verify`'s step 9, which checks
them against the run record and, with `--model DIR`, a directory's files. Edits re-signed by
the signer's key fail at the step that owns them; golden statement and verify report."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from urllib.parse import unquote

import pytest

from provenance.model import Manifest
from provenance.model.errors import ProvError
from provenance.publish.bundle import SBOM_NAME, UNSIGNED_NAME, publish
from provenance.publish.keys import generate
from provenance.publish.verify import verify_bundle
from provenance.sbom.subjects import Subject
from tests.golden import check_golden
from tests.hostile.publish.test_forgeries import resign, statement_of
from tests.provenance.sbom.helpers_sbom import (
    prov,
    sample_facts,
    sample_model_subject,
    sample_run,
    sample_subject,
)
from tests.provenance.sbom.test_sbom_model import POLICY, diverge_result

MODEL_STEP = 9


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    d = tmp_path_factory.mktemp("keys")
    key, pub, _ = generate(d / "signer")
    return key, pub


@pytest.fixture(scope="module")
def result(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("result") / "result.json"
    path.write_text(json.dumps(diverge_result(POLICY), indent=1, sort_keys=True))
    return path


def _deps(st: dict) -> list[dict]:
    return [d for d in st["predicate"]["buildDefinition"]["resolvedDependencies"]
            if d["name"].startswith("model:")]


def _failed(out, pub=None, **kw):
    report = verify_bundle(str(out), pub, no_signature=pub is None, **kw)
    return report.failed


def test_the_statement_lists_the_model_files_linked_to_the_sbom(result, tmp_path):
    out = tmp_path / "b"
    publish([result], sample_model_subject(), out, allow_unrecorded=True)
    st = json.loads((out / UNSIGNED_NAME).read_text())
    sbom = json.loads((out / SBOM_NAME).read_text())
    files = sample_model_subject().manifest.facts["model"]["files"]
    deps = _deps(st)
    assert {d["annotations"]["path"]: d["digest"]["sha256"] for d in deps} == \
        {k: v["sha256"][7:] for k, v in files.items()}
    nested = {f["bom-ref"]: f for c in sbom["components"] for f in c.get("components", [])}
    serial = sbom["serialNumber"].removeprefix("urn:uuid:")
    for d in deps:  # each uri is a CycloneDX BOM-Link to the file's component in this SBOM
        head, _, ref = d["uri"].partition("#")
        assert head == f"urn:cdx:{serial}/1" and unquote(ref) == d["name"]
        assert nested[d["name"]]["hashes"][0]["content"] == d["digest"]["sha256"]
    report = verify_bundle(str(out), no_signature=True)
    assert report.failed is None, report.to_json()
    step = report.steps[MODEL_STEP - 1]
    assert (step.name, step.verdict) == ("model files", "pass")
    assert any("7 model file(s) of model:Qwen3-8B" in d for d in step.details)


def test_golden_statement_and_verify_report(result, tmp_path):
    out = tmp_path / "b"
    publish([result], sample_model_subject(), out, allow_unrecorded=True)
    check_golden("publish/sample-model-statement.intoto.json",
                 (out / UNSIGNED_NAME).read_text())
    r = prov("verify", str(out), "--json", "--no-signature")
    assert r.returncode == 0, r.stdout
    check_golden("publish/sample-model-verify.json", r.stdout.replace(str(out), "BUNDLE"))


@pytest.fixture
def signed(result, tmp_path, keys):
    key, pub = keys
    out = tmp_path / "signed"
    publish([result], sample_model_subject(), out, key_path=key, allow_unrecorded=True)
    assert _failed(out, pub) is None
    return out, key, pub


def _rewrite(out: Path, rel: str, edit, key) -> None:
    """Edit a bundled JSON file and re-sign a statement that hashes the new bytes (what only
    the holder of the signing key can do)."""
    path = out / rel
    doc = json.loads(path.read_text())
    edit(doc)
    data = (json.dumps(doc, indent=2) + "\n").encode()
    path.write_bytes(data)
    st = statement_of(out)
    for d in st["predicate"]["runDetails"]["byproducts"]:
        if d["name"] == rel:
            d["digest"]["sha256"] = hashlib.sha256(data).hexdigest()
    resign(out, key, st)


def _model_component(doc: dict) -> dict:
    return next(c for c in doc["components"] if c["type"] == "machine-learning-model")


def test_an_edited_model_component_resigned_fails_at_the_sbom_step(signed):
    out, key, pub = signed

    def edit(doc):
        weights = _model_component(doc)["components"][2]
        weights["hashes"][0]["content"] = "ee" * 32

    _rewrite(out, SBOM_NAME, edit, key)
    failed = _failed(out, pub)
    assert failed.number == 6 and "model:Qwen3-8B" in failed.details[-1]


def test_an_edited_model_card_resigned_fails_at_the_sbom_step(signed):
    out, key, pub = signed

    def edit(doc):
        metrics = _model_component(doc)["modelCard"]["quantitativeAnalysis"][
            "performanceMetrics"]
        next(m for m in metrics if m["type"] == "policy verdict")["value"] = "PASS"

    _rewrite(out, SBOM_NAME, edit, key)
    assert _failed(out, pub).number == 6


def test_a_record_whose_model_files_differ_fails_at_step_9(signed):
    out, key, pub = signed
    rel = "runs/r-20261101-0001.json"

    def edit(doc):
        doc["facts"]["model"]["files"]["config.json"]["sha256"] = "sha256:" + "ee" * 32

    _rewrite(out, rel, edit, key)
    failed = _failed(out, pub)
    assert failed.number == MODEL_STEP
    assert "config.json" in failed.details[-1] and "run record" in failed.details[-1]


@pytest.mark.parametrize("how", ["digest", "dropped", "added"])
def test_edited_model_dependencies_resigned_fail_at_step_9(signed, how):
    out, key, pub = signed
    st = statement_of(out)
    deps = st["predicate"]["buildDefinition"]["resolvedDependencies"]
    model = [d for d in deps if d["name"].startswith("model:")]
    if how == "digest":
        model[0]["digest"]["sha256"] = "ee" * 32
    elif how == "dropped":
        deps.remove(model[-1])
    else:
        deps.append({**model[0], "name": "model:Qwen3-8B/extra.safetensors"})
    resign(out, key, st)
    failed = _failed(out, pub)
    assert failed.number == MODEL_STEP, failed.details
    assert "resolvedDependencies" in failed.details[-1]


def test_a_model_dependency_from_the_user_is_refused(result, tmp_path):
    with pytest.raises(ProvError, match="--dependency model:weights: names starting with"):
        publish([result], sample_model_subject(), tmp_path / "b", allow_unrecorded=True,
                dependencies={"model:weights": "sha256:" + "c3" * 32})
    assert not (tmp_path / "b").exists()


def _real_model(tmp_path: Path, name: str = "tiny-model") -> tuple[Path, Subject]:
    """A model directory and a run whose record gives its files' sha256 (hashlib's)."""
    d = tmp_path / name
    d.mkdir()
    (d / "config.json").write_text('{"architectures": ["TinyForCausalLM"]}')
    (d / "model.safetensors").write_bytes(bytes(range(256)) * 64)
    (d / "tokenizer.json").write_text('{"model": {}}')
    files = {p.name: {"sha256": "sha256:" + hashlib.sha256(p.read_bytes()).hexdigest(),
                      "size": p.stat().st_size} for p in d.iterdir()}
    facts = {"model": {"files": files}, "runtime": {"transformers": {"models": {
        "0": {"name_or_path": f"local:{name}", "class": "TinyForCausalLM"}}}}}
    m = Manifest(facts={**sample_facts(), **facts})
    return d, Subject(m, label="tiny", kind="run", run=sample_run(m, facts=facts))


def test_verify_model_dir_against_the_bundle(result, tmp_path):
    model, subject = _real_model(tmp_path)
    out = tmp_path / "b"
    publish([result], subject, out, allow_unrecorded=True)
    report = verify_bundle(str(out), no_signature=True, model_dir=model)
    assert report.failed is None, report.to_json()
    assert f"{model}: all 3 file(s) of model:tiny-model re-hashed and match" in \
        report.steps[MODEL_STEP - 1].details
    # one byte of the weights flipped: step 9 fails, naming the file and both digests
    data = bytearray((model / "model.safetensors").read_bytes())
    data[100] ^= 0x01
    (model / "model.safetensors").write_bytes(bytes(data))
    failed = _failed(out, model_dir=model)
    assert failed.number == MODEL_STEP and failed.name == "model files"
    assert f"{model}/model.safetensors: sha256 is " in failed.details[-1]
    r = prov("verify", str(out), "--no-signature", "--model", str(model))
    assert r.returncode == 1, r.stdout
    assert "verification FAILED at step 9 (model files)" in r.stdout
    (model / "model.safetensors").unlink()
    assert "model.safetensors of model:tiny-model is missing" in \
        _failed(out, model_dir=model).details[-1]


def test_verify_model_dir_bad_uses(result, tmp_path):
    out = tmp_path / "plain"
    publish([result], sample_subject(), out, allow_unrecorded=True)  # the run read no model
    failed = _failed(out, model_dir=tmp_path)
    assert failed.number == MODEL_STEP and "holds no model" in failed.details[-1]
    for args, why in (
        (["--model", str(tmp_path / "nope")], "not a directory"),
        (["--model", str(tmp_path), "--run", "r-1"], "with a BUNDLE, --model DIR is checked"),
    ):
        r = prov("verify", str(out), "--no-signature", *args)
        assert r.returncode == 2 and why in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
