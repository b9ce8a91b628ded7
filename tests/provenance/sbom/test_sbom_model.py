"""The model a run read, in its SBOM: one `machine-learning-model` component per model
directory (named as the record names it), a `file` component per file with its SHA-256, and
a model card holding the published results' disclosed figures and policy verdict; strictly
valid CycloneDX 1.6 in JSON and XML (cyclonedx-python-lib's validators), golden files."""

from __future__ import annotations

import json

import numpy as np
import pytest

from provenance.model import Manifest
from provenance.model.errors import ProvError
from provenance.sbom import build_bom, render
from provenance.sbom.models_read import models_read
from provenance.sbom.subjects import PublishedResult, Subject
from tests.golden import check_golden
from tests.provenance.sbom.helpers_sbom import (
    COMMIT,
    sample_model_facts,
    sample_model_subject,
    sample_subject,
)


def _strict(text: str, fmt: str = "json") -> None:
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator
    from cyclonedx.validation.xml import XmlValidator

    validator = JsonStrictValidator if fmt == "json" else XmlValidator
    assert validator(SchemaVersion.V1_6).validate_str(text) is None


def diverge_result(policy: bytes | None = None) -> dict:
    """A diverge result as runners/results.py writes it: the summary made by the runners'
    own `summarise` from per-position values, a strict card, and a policy's verdict."""
    import tempfile
    from pathlib import Path

    from provenance.model import disclosure
    from provenance.model.policy import parse_policy
    from runners.diverge import summarise
    from runners.results import write_result
    from tests.provenance.model.test_disclosure import STRICT

    rng = np.random.default_rng(0)
    n = 64
    ref = rng.integers(0, 50, n)
    cand = np.where(rng.random(n) < 0.9, ref, (ref + 1) % 50)
    kl = rng.gamma(0.5, 1e-4, n)
    per = {"ref_top1": ref, "cand_top1": cand, "margin": rng.random(n), "kl_ref_cand": kl,
           "kl_cand_ref": kl * 1.01, "delta_p": rng.normal(0, 1e-3, n)}
    floor = {"storage_dtype": "float32", "ref": {"mean": 0.0, "max": 0.0},
             "cand": {"mean": 0.0, "max": 0.0}}
    summary, arrays = summarise(per, np.arange(n + 1), floor)
    meta = {"engines": [], "model_digest": "m", "tokenizer_digest": "t", "text_digest": "x",
            "positions": {"n_tokens": n + 1}, "summary": summary}
    with tempfile.TemporaryDirectory() as tmp:
        path = write_result(Path(tmp) / "res", "diverge", meta, arrays,
                            disclosure.DisclosureCard.from_dict(STRICT),
                            parse_policy(policy, "accept.toml") if policy else None)
        return json.loads((path / "result.json").read_text())


POLICY = b"[[check]]\nstatistic = 'top1_agreement'\nmin = 0.99\n" \
         b"[[check]]\nstatistic = 'kl_ref_cand.p99'\nmax = 0.01\n"


@pytest.fixture(scope="module")
def judged() -> dict:
    return diverge_result(POLICY)


def _model(doc: dict) -> list[dict]:
    return [c for c in doc["components"] if c["type"] == "machine-learning-model"]


def _metrics(component: dict) -> dict[str, dict]:
    return {m["type"]: m for m in
            component["modelCard"]["quantitativeAnalysis"]["performanceMetrics"]}


def test_the_model_is_a_component_with_its_files_and_card(judged):
    results = [PublishedResult("results/result.json", judged)]
    text = render(build_bom(sample_model_subject(), results=results))
    _strict(text)
    doc = json.loads(text)
    [model] = _model(doc)
    facts = sample_model_facts()
    assert (model["group"], model["name"], model["version"]) == ("Qwen", "Qwen3-8B", COMMIT)
    assert model["purl"] == f"pkg:huggingface/Qwen/Qwen3-8B@{COMMIT}"
    files = {f["name"]: f["hashes"][0]["content"] for f in model["components"]}
    assert files == {k: v["sha256"][7:] for k, v in facts["model"]["files"].items()}
    assert all(f["type"] == "file" and f["hashes"][0]["alg"] == "SHA-256"
               for f in model["components"])
    assert "hashes" not in model  # seven files: the hashes are the files'
    card = model["modelCard"]
    assert card["modelParameters"]["modelArchitecture"] == "Qwen3ForCausalLM"
    metrics = _metrics(model)
    summary = judged["summary"]
    assert metrics["top1_agreement"]["value"] == json.dumps(summary["top1_agreement"])
    assert metrics["kl_ref_cand.p99.9"]["value"] == json.dumps(summary["kl_ref_cand"]["p99.9"])
    ci = summary["ci"]["kl_ref_cand_mean"]
    assert metrics["ci.kl_ref_cand_mean"] == {
        "type": "ci.kl_ref_cand_mean", "value": json.dumps(ci["mean"]),
        "slice": "results/result.json",
        "confidenceInterval": {"lowerBound": json.dumps(ci["lo"]),
                               "upperBound": json.dumps(ci["hi"])}}
    assert {m["slice"] for m in metrics.values()} == {"results/result.json"}
    assert not any(t.startswith("clusters") for t in metrics)  # lists are not figures
    policy = judged["policy"]
    assert metrics["policy verdict"]["value"] == policy["verdict"]
    for check in policy["checks"]:
        cond = " ".join(f"{k} {check[k]}" for k in ("min", "max") if k in check)
        got = metrics[f"policy check: {check['statistic']} {cond}"]["value"]
        assert got.startswith(f"{check['outcome']}, observed {json.dumps(check['observed'])}")
    props = {p["name"]: p["value"] for p in card["properties"]}
    assert props["prov:disclosure-card"] == "results/result.json#/disclosure"
    assert props["prov:policy-sha256"].endswith(policy["sha256"])
    assert "results/result.json" in card["considerations"]["technicalLimitations"][0]
    # the run depends on its model
    root = doc["metadata"]["component"]["bom-ref"]
    deps = next(d for d in doc["dependencies"] if d["ref"] == root)
    assert model["bom-ref"] in deps["dependsOn"]


def test_a_new_statistic_appears_without_a_change(judged):
    doc = json.loads(json.dumps(judged))
    doc["summary"]["same_top_p"] = {"p50": 0.25, "rms": {"not_computable": "top-k sides"}}
    doc["summary"]["note"] = "a string is not a figure"
    text = render(build_bom(sample_model_subject(),
                            results=[PublishedResult("results/r.json", doc)]))
    metrics = _metrics(_model(json.loads(text))[0])
    assert metrics["same_top_p.p50"]["value"] == "0.25"
    assert metrics["same_top_p.rms"]["value"] == "not computable: top-k sides"
    assert "note" not in metrics


def test_results_without_a_card_add_no_figures():
    plain = {"metric": "top1_agreement", "value": 0.93}  # no disclosure card
    doc = json.loads(render(build_bom(sample_model_subject(),
                                      results=[PublishedResult("results/a.json", plain),
                                               PublishedResult("results/b.csv", None)])))
    card = _model(doc)[0]["modelCard"]
    assert "quantitativeAnalysis" not in card and "considerations" not in card


def test_xml_holds_the_model_card_and_is_valid(judged):
    results = [PublishedResult("results/result.json", judged)]
    text = render(build_bom(sample_model_subject(), results=results), "cyclonedx-xml")
    _strict(text, "xml")
    assert '<modelCard bom-ref="model:Qwen3-8B#model-card">' in text
    assert "<type>policy verdict</type>" in text


def test_golden_files(judged):
    results = [PublishedResult("results/result.json", judged)]
    built = build_bom(sample_model_subject(), results=results)
    check_golden("sbom/sample-model-run.cdx.json", render(built))
    check_golden("sbom/sample-model-run.cdx.xml", render(built, "cyclonedx-xml"))


def test_a_run_that_read_no_model_has_no_model_component():
    doc = json.loads(render(build_bom(sample_subject())))
    assert not _model(doc) and "machine-learning-model" not in json.dumps(doc)
    assert models_read(sample_subject().manifest.facts) == []


def _f(byte: str) -> dict:
    return {"sha256": "sha256:" + byte * 32, "size": 1}


def test_several_directories_each_its_own_component_tokenizer_without_figures(judged):
    """Two models and a tokenizer read from three directories (the probe keys the files
    `<directory>/<path>`), and a weights file read from a fourth, which no load names."""
    facts = {
        "model": {"files": {
            "demo-model/config.json": _f("01"), "demo-model/model.safetensors": _f("02"),
            "draft/model.safetensors": _f("03"), "tok/tokenizer.json": _f("04"),
            "weights/extra.gguf": _f("05"),
        }},
        "runtime": {"transformers": {
            "models": {"0": {"name_or_path": "local:demo-model", "class": "Qwen3ForCausalLM"},
                       "1": {"name_or_path": "local:draft", "class": "LlamaForCausalLM"}},
            "tokenizers": {"0": {"name_or_path": "local:tok", "class": "X"}},
        }},
    }
    models = {m.key: m for m in models_read(facts)}
    assert set(models) == {"demo-model", "draft", "tok", "weights"}
    assert [f.path for f in models["demo-model"].files] == ["config.json", "model.safetensors"]
    assert (models["tok"].role, models["weights"].role) == ("tokenizer", "files")
    assert models["weights"].name_from == "model.files (the directory's name)"
    subject = Subject(Manifest(facts=facts), label="x", kind="manifest")
    text = render(build_bom(subject, results=[PublishedResult("results/r.json", judged)]))
    _strict(text)
    by_ref = {c["bom-ref"]: c for c in _model(json.loads(text))}
    assert set(by_ref) == {"model:demo-model", "model:draft", "model:tok", "model:weights"}
    assert by_ref["model:draft"]["modelCard"]["modelParameters"]["modelArchitecture"] == \
        "LlamaForCausalLM"
    assert "quantitativeAnalysis" in by_ref["model:demo-model"]["modelCard"]
    assert "modelCard" not in by_ref["model:tok"]  # a tokenizer computed no figure
    single = by_ref["model:weights"]  # one file: the model's own hashes are that file's
    assert single["hashes"] == [{"alg": "SHA-256", "content": "05" * 32}]


def test_a_tokenizer_only_run_and_a_run_no_engine_names():
    tok = {"model": {"files": {"tokenizer.json": _f("04"), "tokenizer_config.json": _f("05")}},
           "runtime": {"transformers": {"tokenizers": {
               "0": {"name_or_path": "local:qwen-tok", "class": "Qwen2TokenizerFast"}}}}}
    [m] = models_read(tok)
    assert (m.name, m.role) == ("qwen-tok", "tokenizer")
    gguf = {"model": {"files": {"qwen3-8b-q4_k_m.gguf": _f("06")}}}
    [m] = models_read(gguf)
    assert (m.name, m.role, m.name_from) == ("qwen3-8b-q4_k_m.gguf", "files",
                                             "model.files (its one weights file)")


@pytest.mark.parametrize("key", ["../etc/passwd", "/abs/model.bin", "a//b.bin", "a/./b.bin"])
def test_a_file_key_outside_its_directory_is_refused(key):
    with pytest.raises(ProvError, match="not a relative path inside a model directory"):
        models_read({"model": {"files": {key: _f("07")}}})


def test_a_malformed_file_entry_is_refused():
    with pytest.raises(ProvError, match="not a recorded file"):
        models_read({"model": {"files": {"model.bin": {"sha256": "md5:00"}}}})


def test_a_directory_name_xml_must_escape_keeps_its_card(judged):
    facts = {"model": {"files": {'r&d "v2"/model.safetensors': _f("08"),
                                 "other/config.json": _f("09")}},
             "runtime": {"transformers": {"models": {
                 "0": {"name_or_path": 'local:r&d "v2"', "class": "Qwen3ForCausalLM"}}}}}
    built = build_bom(Subject(Manifest(facts=facts), label="x", kind="manifest"),
                      results=[PublishedResult("results/r.json", judged)])
    text = render(built, "cyclonedx-xml")
    _strict(text, "xml")
    assert """<modelCard bom-ref='model:r&amp;d "v2"#model-card'>""" in text
    assert text.count("<modelCard ") == 2  # "other": read, no load names it, figures too
