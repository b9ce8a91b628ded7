"""What verify's steps 5 and 6 check: the statement, the run record, the manifest and the
SBOM of a bundle tell one story. Each function raises ProvError naming the first mismatch."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from provenance.model.errors import ProvError
from provenance.model.inputs import parse_json, read_json, read_text
from provenance.publish.bounds import MAX_DOCUMENT_BYTES

_MANIFEST_URI = re.compile(r"^manifests/(?P<hex>[0-9a-f]{64})\.json$")


def check_manifest(root: Path, resolved: list[dict], byproducts: list[dict]):
    """The bundled manifest and its identity digest. The resolvedDependency's digest is the
    sha256 of the file's bytes (an in-toto ResourceDescriptor digests the resource); the
    identity digest is the file name and the `identityDigest` annotation."""
    from provenance.model import Manifest, ManifestError

    deps = [d for d in resolved if d.get("name") == "manifest"]
    if len(deps) != 1:
        raise ProvError(f"the statement names {len(deps)} manifests in resolvedDependencies")
    dep = deps[0]
    uri = str(dep.get("uri", ""))
    m = _MANIFEST_URI.match(uri)
    if not m:
        raise ProvError(f"manifest uri {uri!r} is not manifests/<sha256 hex>.json")
    by_name = {b["name"]: b["digest"]["sha256"] for b in byproducts}
    if uri not in by_name:
        raise ProvError(f"manifest {uri} is not among the statement's byproducts")
    if (dep.get("digest") or {}).get("sha256") != by_name[uri]:
        raise ProvError(f"resolvedDependencies digest of {uri} is not the sha256 of its bytes")
    identity = "sha256:" + m.group("hex")
    annotated = (dep.get("annotations") or {}).get("identityDigest")
    if annotated != identity:
        raise ProvError(f"manifest annotation identityDigest {annotated!r} is not {identity}")
    try:
        manifest = Manifest.read(root / uri)
    except ManifestError as exc:
        raise ProvError(str(exc)) from None
    if manifest.digest() != identity:
        raise ProvError(f"manifest digest recomputed as {manifest.digest()}, statement says "
                        f"{identity}")
    return manifest, identity


def run_record(root: Path, statement: dict) -> dict | None:
    """The bundled record of the run the statement describes; None for a bundle without a
    run (published from a manifest)."""
    predicate = statement["predicate"]
    run_id = (predicate["runDetails"].get("metadata") or {}).get("invocationId")
    records = [b["name"] for b in predicate["runDetails"]["byproducts"]
               if b["name"].startswith("runs/")]
    external = predicate["buildDefinition"].get("externalParameters") or {}
    claims_run = run_id is not None or "command" in external or "runParameters" in external
    if not records and not claims_run:
        return None
    # Other records are the server runs of a bound client's exchanges (verify's step 8
    # accounts for each); without exchanges, one record only.
    served = any(b["name"].startswith("exchanges/")
                 for b in predicate["runDetails"]["byproducts"])
    own = f"runs/{run_id}.json"
    if own not in records or (len(records) != 1 and not served):
        raise ProvError(f"the statement describes run {run_id!r} but the bundle holds "
                        f"{records or 'no run record'}")
    record = read_json(root / own, "record")
    if not isinstance(record, dict):
        raise ProvError(f"{own} is not a JSON object")
    return record


def check_run_record(root: Path, statement: dict, manifest_digest: str) -> list[str]:
    """The statement's command, parameters, environment, times and output digests are the
    bundled run record's. A bundle without a run (from --manifest) has nothing to check."""
    from provenance.model.redact import redact_argv, redact_value

    record = run_record(root, statement)
    if record is None:
        return ["no run in this bundle (published from a manifest)"]
    predicate = statement["predicate"]
    external = predicate["buildDefinition"].get("externalParameters") or {}
    meta = predicate["runDetails"].get("metadata") or {}
    rid = str(record.get("run_id"))
    want: dict[str, Any] = {
        "invocationId": (meta.get("invocationId"), rid),
        "command": (external.get("command"), redact_argv([str(a) for a in
                                                          record.get("command") or []])),
        "environment (manifest digest)": (manifest_digest, record.get("manifest_digest")),
        "startedOn": (meta.get("startedOn"), record.get("started_at")),
        "finishedOn": (meta.get("finishedOn"), record.get("ended_at")),
    }
    params = record.get("params")
    if isinstance(params, dict) and params:
        want["runParameters"] = (external.get("runParameters"),
                                 {k: redact_value(k, str(v)) for k, v in sorted(params.items())})
    elif "runParameters" in external:
        want["runParameters"] = (external["runParameters"], None)
    for what, (claimed, recorded) in want.items():
        if claimed != recorded:
            raise ProvError(f"statement {what} {_short(claimed)} is not the run record's "
                            f"{_short(recorded)}")
    _check_outputs(statement["subject"], record)
    return [f"run record {rid}: command, parameters, environment and times agree"]


def _check_outputs(subjects: list[dict], record: dict) -> None:
    outputs = record.get("outputs") if isinstance(record.get("outputs"), dict) else {}
    for subj in subjects:
        path = (subj.get("annotations") or {}).get("runOutput")
        if path is None:
            continue
        entry = outputs.get(path)
        recorded = entry.get("digest") if isinstance(entry, dict) else None
        if recorded != "sha256:" + subj["digest"]["sha256"]:
            raise ProvError(f"{subj['name']} claims to be run output {path}, which the run "
                            f"record gives as {recorded or 'absent'}")


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 120 else text[:117] + "..."


def _components(doc: dict) -> dict[str, dict]:
    """bom-ref -> component, less what only the publishing host could read (licences)."""
    out = {}
    for c in doc.get("components") or []:
        c = {k: v for k, v in c.items() if k != "licenses"}
        out[str(c.get("bom-ref"))] = c
    return out


def check_sbom(root: Path, manifest, statement: dict) -> str:
    """Strictly valid CycloneDX 1.6, and every component is the one the manifest gives (a
    model component's card: the one the bundle's results give)."""
    from provenance.publish.bundle import SBOM_NAME
    from provenance.sbom import Subject, build_bom, render, validate

    text = read_text(root / SBOM_NAME, "sbom", MAX_DOCUMENT_BYTES)  # bounded in step 1
    validate(text)
    doc = parse_json(text, SBOM_NAME)
    props = {p.get("name"): p.get("value") for p in doc.get("metadata", {}).get("properties", [])}
    digest = manifest.digest()
    if props.get("prov:manifest-digest") != digest:
        raise ProvError(f"SBOM names manifest {props.get('prov:manifest-digest')}, bundle has "
                        f"{digest}")
    for section, value in manifest.section_digests().items():
        if props.get(f"prov:section-digest:{section}") != value:
            raise ProvError(f"SBOM section digest of {section} is not the manifest's")
    built = build_bom(Subject(manifest, "bundle", "manifest"), results=_results(root, statement))
    expected = _components(json.loads(render(built)))
    have = _components(doc)
    missing, extra = sorted(set(expected) - set(have)), sorted(set(have) - set(expected))
    if missing or extra:
        raise ProvError(f"SBOM components differ from the manifest: {len(missing)} missing "
                        f"({', '.join(missing[:3])}), {len(extra)} extra "
                        f"({', '.join(extra[:3])})")
    changed = [ref for ref in expected if expected[ref] != have[ref]]
    if changed:
        raise ProvError(f"SBOM components differ from the manifest: {', '.join(changed[:3])}")
    models = sum(1 for c in have.values() if c.get("type") == "machine-learning-model")
    if not models:
        return (f"strictly valid CycloneDX 1.6; all {len(have)} components (Python, Debian, "
                "GPU stack, OS) are the manifest's")
    return (f"strictly valid CycloneDX 1.6; all {len(have)} components (Python, Debian, GPU "
            f"stack, OS, {models} model(s) with their model cards) are the manifest's and the "
            "results'")


def _results(root: Path, statement: dict) -> list:
    """The bundle's results (re-hashed at step 4), whose disclosed figures are in the model
    cards."""
    from provenance.model.kl import read_json_object
    from provenance.sbom import PublishedResult

    # a result that is not a JSON object (a CSV, an image) is not read past its first bytes
    return [PublishedResult(s["name"], read_json_object(root / s["name"]))
            for s in statement["subject"]]
