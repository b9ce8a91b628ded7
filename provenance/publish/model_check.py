"""What verify's step 9 checks: the model files of a bundle tell one story, and with
`--model DIR` a model directory is the one the bundle names.

1. the bundled run record's `facts.model.files` are the bundled manifest's `model.files`
   (every key, every sha256): the SBOM's model components were rebuilt from that manifest
   at step 6, so the SBOM, the manifest and the record agree;
2. the statement's resolved dependencies named `model:...` are exactly one per model file,
   with its sha256 and the BOM-Link to its component in the bundled SBOM;
3. with a directory: each file of the bundle's model component (the SBOM's, by the
   directory's name, or the only one) hashed afresh in it (`model_dir.compare`).

Each raises ProvError naming the first mismatch.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from provenance.model.errors import ProvError
from provenance.sbom import ModelRead, models_read


def check_models(root: Path, statement: dict, manifest, sbom: dict,
                 model_dir: Path | None) -> list[str] | None:
    """The details of a passed step; None when the bundle holds no model and no directory
    was given (the step is skipped)."""
    from provenance.publish.consistency import run_record

    models = models_read(manifest.facts)
    resolved = statement["predicate"]["buildDefinition"]["resolvedDependencies"]
    record = run_record(root, statement)
    if not models:
        if any(str(d.get("name", "")).startswith("model:") for d in resolved):
            raise ProvError("the statement lists model files, but the run record holds none")
        if model_dir is not None:
            raise ProvError(f"--model {model_dir}: the bundle holds no model to check it "
                            "against (the run read no model files)")
        return None
    details = [_against_record(record, manifest)] if record is not None else []
    details.append(_dependencies(models, resolved, str(sbom.get("serialNumber", ""))))
    if model_dir is not None:
        details.append(_directory(model_dir, models, sbom))
    return details


def _recorded(files: Any) -> dict[str, str]:
    files = files if isinstance(files, dict) else {}
    return {str(k): str(v.get("sha256")) if isinstance(v, dict) else repr(v)
            for k, v in files.items()}


def _against_record(record: dict, manifest) -> str:
    facts = record.get("facts") if isinstance(record.get("facts"), dict) else {}
    theirs = _recorded((facts.get("model") or {}).get("files") if isinstance(
        facts.get("model"), dict) else None)
    ours = _recorded((manifest.facts.get("model") or {}).get("files"))
    if theirs != ours:
        diff = sorted(k for k in theirs.keys() | ours.keys() if theirs.get(k) != ours.get(k))
        raise ProvError(f"model.files.{diff[0]}: the manifest says {ours.get(diff[0])}, the run "
                        f"record {theirs.get(diff[0])}")
    return (f"run record {record.get('run_id')}: model.files ({len(ours)} file(s)) are the "
            "manifest's, from which step 6 rebuilt the SBOM's model components")


def _dependencies(models: list[ModelRead], resolved: list[dict], serial: str) -> str:
    from provenance.publish.statement import model_dependencies

    uuid = serial.removeprefix("urn:uuid:")
    want = {d["name"]: d for d in model_dependencies(models, uuid)}
    have = {str(d.get("name")): d for d in resolved if str(d.get("name", "")).startswith("model:")}
    for name in sorted(want.keys() | have.keys()):
        if name not in have:
            raise ProvError(f"the statement's resolvedDependencies lack model file {name}")
        if name not in want:
            raise ProvError(f"the statement's resolvedDependencies list {name}, which the run "
                            "record does not")
        if have[name] != want[name]:
            raise ProvError(f"resolvedDependencies {name} is {_short(have[name])}, the run "
                            f"record gives {_short(want[name])}")
    refs = ", ".join(m.ref for m in models)
    return (f"the statement lists the {len(want)} model file(s) of {refs} as resolved "
            "dependencies, each with its sha256 and BOM-Link to the SBOM")


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 160 else text[:157] + "..."


def _directory(model_dir: Path, models: list[ModelRead], sbom: dict) -> str:
    from provenance.publish.model_dir import ModelCheck, compare

    model = _chosen(model_dir, models)
    expected = _component_files(sbom, model.ref)
    check = compare(model_dir, ModelCheck(f"bundle {model.ref}", expected,
                                          lists_every_file=False))
    if check.failed:
        first = next(iter(check.differing), None)
        if first is not None:
            want, got = check.differing[first]
            raise ProvError(f"{model_dir}/{first}: sha256 is {got[7:]}, the bundle's "
                            f"{model.ref} says {want[7:]} ({len(check.differing)} file(s) "
                            f"differ, {len(check.missing)} missing)")
        raise ProvError(f"{model_dir}: {check.missing[0]} of {model.ref} is missing "
                        f"({len(check.missing)} file(s) missing)")
    return (f"{model_dir}: all {len(check.matched)} file(s) of {model.ref} re-hashed and "
            "match")


def _chosen(model_dir: Path, models: list[ModelRead]) -> ModelRead:
    """The model a directory is checked against: the one it is named after, or the only one."""
    name = Path(model_dir).resolve().name
    named = [m for m in models if name in (m.key, m.name)]
    if len(named) == 1:
        return named[0]
    if len(models) == 1:
        return models[0]
    raise ProvError(f"--model {model_dir}: the bundle holds {len(models)} models "
                    f"({', '.join(m.ref for m in models)}); give the directory of one of them "
                    "under its recorded name")


def _component_files(sbom: dict, ref: str) -> dict[str, str]:
    """path -> "sha256:<hex>" of the SBOM model component `ref`'s file components."""
    component = next((c for c in sbom.get("components") or [] if c.get("bom-ref") == ref),
                     None)
    if component is None or component.get("type") != "machine-learning-model":
        raise ProvError(f"the SBOM has no machine-learning-model component {ref}")
    out = {}
    for f in component.get("components") or []:
        sha = next((h.get("content") for h in f.get("hashes") or []
                    if h.get("alg") == "SHA-256"), None)
        out[str(f.get("name"))] = f"sha256:{sha}"
    return out
