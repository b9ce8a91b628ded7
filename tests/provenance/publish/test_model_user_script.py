"""The model in the SBOM and the bundle, shown on a program written the way a user writes it:
a plain script loading the demo model with transformers, run under `prov exec`. Then
`prov sbom --run` holds the model component with its files (their sha256 by hashlib, the
oracle) and model card (its architecture as config.json names it), valid for
cyclonedx-python-lib's strict validator; a bundle of that run with a real divergence judged
by a policy holds it too, with the divergence's figures and the verdict in the card, the
model files among the statement's resolved dependencies (parsed by in-toto-attestation);
`prov verify` passes, and fails at step 9 once a weight file in the model directory is
edited, and at step 6 once the SBOM's model component is edited and re-signed.

torch is imported only in the child (the user's script)."""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import sys
from pathlib import Path

import pytest

from provenance.publish.bundle import SBOM_NAME, SIGNED_NAME
from provenance.publish.keys import generate
from provenance.publish.verify import verify_bundle
from tests.hostile.publish.test_forgeries import resign, statement_of
from tests.hostile.publish.test_spec_conventions import check_with_in_toto
from tests.runners.clihelp import prov

SCRIPT = """\
import json
import sys

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

model_dir, text_file = sys.argv[1], sys.argv[2]
tokenizer = AutoTokenizer.from_pretrained(model_dir)
model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
with open(text_file, encoding="utf-8") as fh:
    ids = tokenizer(fh.read(), return_tensors="pt").input_ids[:, :64]
with torch.inference_mode():
    top1 = model(ids).logits.argmax(-1)[0].tolist()
with open("top1.json", "w") as fh:
    json.dump({"model": model_dir, "top1": top1}, fh)
"""
POLICY = "[[check]]\nstatistic = 'top1_agreement'\nmin = 0.9\n"


@pytest.fixture(scope="module")
def user_run(demo_model_dir, tmp_path_factory):
    """(workdir, store, run id, model directory): the script run on a copy of the demo model
    (the copy is edited below; the cached model is shared)."""
    root = tmp_path_factory.mktemp("user-model")
    model = root / "demo-model"
    shutil.copytree(demo_model_dir, model)
    (root / "user.py").write_text(SCRIPT)
    p = prov("exec", "--json", "-o", "top1.json", "--", sys.executable, "user.py", str(model),
             str(model / "eval.txt"), store=root / "store", cwd=root)
    assert p.returncode == 0, p.stderr[-3000:]
    return root, root / "store", json.loads(p.stdout)["run_id"], model


def _model_component(doc: dict) -> dict:
    [model] = [c for c in doc["components"] if c["type"] == "machine-learning-model"]
    return model


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_prov_sbom_of_the_run_holds_the_model(user_run):
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator

    root, store, run_id, model = user_run
    p = prov("sbom", "--run", run_id, store=store, cwd=root)
    assert p.returncode == 0, p.stderr
    assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(p.stdout) is None
    component = _model_component(json.loads(p.stdout))
    assert component["name"] == "demo-model" and component["bom-ref"] == "model:demo-model"
    files = {f["name"]: f["hashes"][0]["content"] for f in component["components"]}
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= set(files)
    assert files == {name: _sha256(model / name) for name in files}
    config = json.loads((model / "config.json").read_text())
    card = component["modelCard"]
    assert card["modelParameters"]["modelArchitecture"] == config["architectures"][0]
    assert "quantitativeAnalysis" not in card  # nothing was published: no figure to disclose


@pytest.fixture(scope="module")
def judged(real_diverge, tmp_path_factory) -> Path:
    """The real divergence's result as `prov run diverge --policy` writes it: the same
    figures, card and arrays, with the policy's verdict on its summary."""
    from provenance.model.disclosure import DisclosureCard
    from provenance.model.policy import parse_policy
    from runners.results import read_result, write_result

    doc, arrays = read_result(real_diverge[0])
    skip = {"format", "kind", "disclosure", "arrays", "arrays_sha256", "policy"}
    meta = {k: v for k, v in doc.items() if k not in skip}
    out = tmp_path_factory.mktemp("judged") / "div"
    write_result(out, doc["kind"], meta, arrays, DisclosureCard.from_dict(doc["disclosure"]),
                 parse_policy(POLICY.encode(), "accept.toml"))
    return out / "result.json"


@pytest.fixture(scope="module")
def bundle(user_run, judged, tmp_path_factory):
    root, store, run_id, _ = user_run
    keys = tmp_path_factory.mktemp("keys")
    key, pub, _ = generate(keys / "signer")
    out = root / "bundle"
    p = prov("publish", str(judged), "--run", run_id, "--key", str(key), "--out", str(out),
             "--allow-unrecorded", store=store, cwd=root)
    assert p.returncode == 0, p.stderr
    return out, key, pub


def test_the_bundle_holds_the_model_its_card_and_dependencies(user_run, judged, bundle):
    from provenance.sbom import validate

    _, _, _, model = user_run
    out = bundle[0]
    text = (out / SBOM_NAME).read_text()
    validate(text)  # cyclonedx-python-lib, strict
    component = _model_component(json.loads(text))
    result = json.loads(judged.read_text())
    metrics = {m["type"]: m for m in
               component["modelCard"]["quantitativeAnalysis"]["performanceMetrics"]}
    summary = result["summary"]
    assert metrics["top1_agreement"]["value"] == json.dumps(summary["top1_agreement"])
    assert metrics["kl_ref_cand.mean"]["value"] == json.dumps(summary["kl_ref_cand"]["mean"])
    assert metrics["policy verdict"]["value"] == result["policy"]["verdict"] == "PASS"
    assert {m["slice"] for m in metrics.values()} == {"results/result.json"}
    st = statement_of(out)
    deps = {d["annotations"]["path"]: d["digest"]["sha256"]
            for d in st["predicate"]["buildDefinition"]["resolvedDependencies"]
            if d["name"].startswith("model:demo-model/")}
    assert deps == {f["name"]: _sha256(model / f["name"]) for f in component["components"]}
    payload = base64.b64decode(json.loads((out / SIGNED_NAME).read_text())["payload"])
    assert check_with_in_toto(payload) == st


def test_prov_verify_passes_and_an_edited_weight_file_fails_at_step_9(user_run, bundle):
    root, store, _, model = user_run
    out, _, pub = bundle
    report = verify_bundle(str(out), pub, model_dir=model)
    assert report.failed is None, report.to_json()
    n = len(_model_component(json.loads((out / SBOM_NAME).read_text()))["components"])
    assert f"{model}: all {n} file(s) of model:demo-model re-hashed and match" in \
        report.steps[8].details
    weights = model / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 0x01
    weights.write_bytes(bytes(data))
    bad = prov("verify", str(out), "--key", str(pub), "--model", str(model), store=store,
               cwd=root)
    assert bad.returncode == 1, bad.stdout
    assert "verification FAILED at step 9 (model files)" in bad.stdout
    assert f"model.safetensors: sha256 is {_sha256(weights)}" in bad.stdout


def test_an_edited_model_component_resigned_fails_at_step_6(bundle, tmp_path):
    out, key, pub = bundle
    out = Path(shutil.copytree(out, tmp_path / "bundle"))
    sbom = out / SBOM_NAME
    doc = json.loads(sbom.read_text())
    files = _model_component(doc)["components"]
    weights = next(f for f in files if f["name"] == "model.safetensors")
    weights["hashes"][0]["content"] = "ee" * 32
    data = (json.dumps(doc, indent=2) + "\n").encode()
    sbom.write_bytes(data)
    st = statement_of(out)
    next(d for d in st["predicate"]["runDetails"]["byproducts"]
         if d["name"] == SBOM_NAME)["digest"]["sha256"] = hashlib.sha256(data).hexdigest()
    resign(out, key, st)
    failed = verify_bundle(str(out), pub).failed
    assert failed is not None and failed.number == 6
    assert "model:demo-model" in failed.details[-1]
