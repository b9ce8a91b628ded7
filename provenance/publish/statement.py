"""The in-toto Statement v1 with a SLSA-provenance-v1-shaped predicate, built with the
in-toto-attestation library's types (`Statement`, `ResourceDescriptor`, protobuf) and
serialised by protobuf's JSON mapping, which gives the same document the golden files hold.

The predicate is the library's: a `google.protobuf.Struct` (the Statement holds any
predicate so), filled with ResourceDescriptors converted by the same library. Not the typed
SLSA `Provenance` message: its `startedOn`/`finishedOn` are protobuf Timestamps, whose JSON
drops trailing zero digits (a record's `.120000Z` would be published as `.120Z`), so the
statement would no longer carry the run record's times as recorded. Every value in the
predicate is a string, a list or an object (a Struct stores numbers as floats).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NotRequired, TypedDict

from provenance.model.redact import redact_argv, redact_value
from provenance.sbom import ModelRead, Subject

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://slsa.dev/provenance/v1"
BUILD_TYPE = "urn:prov-llm:buildtype:run:v1"
BUILDER_ID = "urn:prov-llm:builder:prov"


class Descriptor(TypedDict):
    """A ResourceDescriptor as its JSON (subjects, resolved dependencies, byproducts)."""

    name: str
    digest: dict[str, str]  # algorithm -> hex
    uri: NotRequired[str]
    mediaType: NotRequired[str]
    annotations: NotRequired[dict[str, str]]


class ExternalParameters(TypedDict):
    parameters: dict[str, str]  # --param NAME=VALUE, secrets redacted
    command: NotRequired[list[str]]  # the run's argv, redacted
    runParameters: NotRequired[dict[str, str]]
    allowUnrecorded: NotRequired[list[str]]


class BuildMetadata(TypedDict, total=False):
    invocationId: str  # the run id
    startedOn: str  # as the run record holds them (RFC 3339)
    finishedOn: str


def descriptor(name: str, sha256_hex: str, *, uri: str = "", media_type: str = "",
               annotations: dict[str, str] | None = None) -> Descriptor:
    """A ResourceDescriptor (in-toto-attestation's), as its JSON."""
    return _descriptor_json(name=name, digest={"sha256": sha256_hex}, uri=uri,
                            media_type=media_type, annotations=annotations)


def _descriptor_json(**fields: Any) -> Descriptor:
    from google.protobuf import json_format
    from in_toto_attestation.v1.resource_descriptor import ResourceDescriptor

    rd = ResourceDescriptor(**fields)
    rd.validate()
    return json_format.MessageToDict(rd.pb)  # type: ignore[return-value]


def build_statement(
    subjects: list[Descriptor],
    subject: Subject,
    byproducts: list[Descriptor],
    parameters: dict[str, str],
    dependencies: dict[str, str],
    prov_version: str,
    manifest_sha256: str = "",
    unrecorded: list[str] | None = None,
    models: Sequence[ModelRead] = (),
    sbom_serial: str = "",
) -> dict[str, Any]:
    """`manifest_sha256`: the sha256 of the bundled manifest file's bytes (a
    ResourceDescriptor digests the resource); `unrecorded`: subjects published with
    --allow-unrecorded although the run did not record them as outputs; `models`: the
    models the run read (their files become resolved dependencies, each linked to its
    component in the SBOM whose serial number is `sbom_serial`)."""
    from google.protobuf import json_format
    from in_toto_attestation.v1.resource_descriptor import ResourceDescriptor
    from in_toto_attestation.v1.statement import Statement

    predicate = {
        "buildDefinition": {
            "buildType": BUILD_TYPE,
            "externalParameters": _external(subjects, subject, parameters, unrecorded),
            "internalParameters": {"subject": f"{subject.kind}: {subject.label}"},
            "resolvedDependencies": _resolved(subject, manifest_sha256, dependencies,
                                              models, sbom_serial),
        },
        "runDetails": {
            "builder": {"id": BUILDER_ID, "version": {"prov": prov_version}},
            "metadata": _metadata(subject),
            "byproducts": byproducts,
        },
    }
    pbs = [json_format.ParseDict(s, ResourceDescriptor().pb) for s in subjects]
    statement = Statement(pbs, PREDICATE_TYPE, predicate)
    statement.validate()
    return json_format.MessageToDict(statement.pb)


def _external(subjects: list[Descriptor], subject: Subject, parameters: dict[str, str],
              unrecorded: list[str] | None) -> ExternalParameters:
    """externalParameters: the parameters given, and the run's command and parameters."""
    run = subject.run
    external: ExternalParameters = {
        "parameters": {k: redact_value(k, v) for k, v in sorted(parameters.items())}
    }
    if run is None:
        return external
    external["command"] = redact_argv(list(run.argv))
    params = run.record.get("params")
    if isinstance(params, dict) and params:
        external["runParameters"] = {k: redact_value(k, str(v))
                                     for k, v in sorted(params.items())}
    # A result the run itself declared as an output says so in its subject entry.
    by_digest = {d: p for p, d in run.outputs.items()}
    for subj in subjects:
        path = by_digest.get("sha256:" + subj["digest"]["sha256"])
        if path:
            subj["annotations"] = {"runOutput": path}
    if unrecorded:
        external["allowUnrecorded"] = sorted(unrecorded)
    return external


def _resolved(subject: Subject, manifest_sha256: str, dependencies: dict[str, str],
              models: Sequence[ModelRead], sbom_serial: str) -> list[Descriptor]:
    """resolvedDependencies: the manifest file, the image, the models read, the rest named."""
    m = subject.manifest
    identity = m.digest()
    resolved = [
        descriptor(
            "manifest",
            manifest_sha256,
            uri=f"manifests/{identity.split(':', 1)[1]}.json",
            annotations={"identityDigest": identity,
                         "identityDigestOf": "canonical JSON of the manifest's identity leaves"},
        )
    ]
    image = m.facts.get("image") if isinstance(m.facts.get("image"), dict) else None
    if image is not None:
        digest = next((str(image[k]) for k in ("digest", "manifest_digest", "index_digest")
                       if isinstance(image.get(k), str) and image[k].startswith("sha256:")), None)
        ref = next((str(image[k]) for k in ("reference", "ref", "name", "source")
                    if isinstance(image.get(k), str)), "image")
        if digest:
            resolved.append(descriptor("image", digest[7:], uri=ref))
    resolved += model_dependencies(models, sbom_serial)
    for name, value in sorted(dependencies.items()):
        algo, _, hexd = value.partition(":")
        resolved.append(_descriptor_json(name=name, digest={algo: hexd}))
    return resolved


def _metadata(subject: Subject) -> BuildMetadata:
    run = subject.run
    metadata: BuildMetadata = {}
    if run is not None:
        metadata["invocationId"] = run.run_id
        if run.started:
            metadata["startedOn"] = run.started
        if run.ended:
            metadata["finishedOn"] = run.ended
    return metadata


def model_dependencies(models: Sequence[ModelRead], sbom_serial: str) -> list[Descriptor]:
    """One ResourceDescriptor per model file the run read: named by its file component's
    bom-ref in the SBOM, `uri` the CycloneDX BOM-Link to that component, its sha256."""
    from cyclonedx.model import XsUri

    out = []
    for model in models:
        for f in model.files:
            link = XsUri.make_bom_link(sbom_serial, 1, model.file_ref(f))
            out.append(descriptor(model.file_ref(f), f.sha256, uri=str(link),
                                  annotations={"model": model.ref, "path": f.path}))
    return out
