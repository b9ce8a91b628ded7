"""Build a CycloneDX 1.6 BOM from a `Subject` (a manifest, maybe a run, maybe an image).

Deterministic by construction: the serial number is a UUIDv5 of the manifest digest (and
run id, and audit database digest when vulnerabilities are included), there is no
timestamp unless one is passed, and every bom-ref is a purl or a fixed name.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from provenance.model.redact import redact_argv, redact_value
from provenance.sbom import components as comp
from provenance.sbom.metadata import marker_environment, read_installed, resolve_requires
from provenance.sbom.model_card import model_card
from provenance.sbom.model_components import model_component
from provenance.sbom.models_read import models_read
from provenance.sbom.subjects import PublishedResult, Subject

SERIAL_NAMESPACE = uuid.UUID("6f0b1c1e-6d2a-5f57-9a53-70726f762d73")  # fixed: "prov-s"


@dataclass
class BuiltBom:
    bom: Any  # cyclonedx.model.bom.Bom
    formulation: list[dict[str, Any]] = field(default_factory=list)  # raw JSON, see render
    graph_note: str = ""
    # bom-ref of a model component -> its modelCard (raw JSON, see render)
    model_cards: dict[str, dict[str, Any]] = field(default_factory=dict)


def serial_for(manifest_digest: str, *extra: str) -> uuid.UUID:
    return uuid.uuid5(SERIAL_NAMESPACE, "\n".join((manifest_digest, *extra)))


def _prop(name: str, value: Any):
    from cyclonedx.model import Property

    return Property(name=name, value=str(value))


def prov_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("prov-llm")
    except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "0+unknown"


def build_bom(
    subject: Subject,
    timestamp: datetime | None = None,
    vulnerabilities: list | None = None,
    serial_extra: tuple[str, ...] = (),
    results: Sequence[PublishedResult] = (),
) -> BuiltBom:
    """`results`: the published results whose disclosed figures go into the model cards."""
    from cyclonedx.model.bom import Bom

    m = subject.manifest
    digest = m.digest()
    parts = _components(subject)
    root = _root_component(subject, digest)
    meta = _metadata(subject, root, timestamp)
    extra = tuple(serial_extra)
    if subject.run:
        extra = (subject.run.run_id, *extra)
    bom = Bom(
        components=[*parts.python, *parts.others],
        serial_number=serial_for(digest, *extra),
        metadata=meta,
        vulnerabilities=vulnerabilities or [],
    )
    note = _dependency_graph(bom, root, parts)
    meta.properties.add(_prop("prov:dependency-graph", note))
    _redact_properties([meta, *bom.components])
    cards = {m.ref: card for m in parts.models if (card := model_card(m, results)) is not None}
    return BuiltBom(bom=bom, formulation=_formulation(subject), graph_note=note,
                    model_cards=cards)


def _section(facts: dict[str, Any], key: str) -> dict[str, Any]:
    """A section of the facts as a dict ({} when absent or of another shape)."""
    value = facts.get(key)
    return value if isinstance(value, dict) else {}


@dataclass
class _Parts:
    python: list  # Python packages, one component each
    others: list  # OS packages, the GPU stack, the OS, the models read
    models: list  # the models read (their cards are built from them)
    installed: dict[str, Any]  # installed metadata by name, where the environment is here
    python_facts: dict[str, Any]


def _components(subject: Subject) -> _Parts:
    facts = subject.manifest.facts
    python = _section(facts, "python")
    packages = _section(python, "packages")
    os_facts = _section(facts, "os")
    release = _section(os_facts, "release")
    info = read_installed(packages) if subject.local else {}
    others = [*comp.deb_components(_section(os_facts, "dpkg"), release),
              *comp.apk_components(_section(os_facts, "apk"), release),
              *comp.gpu_stack_components(facts)]
    os_comp = comp.os_component(os_facts)
    if os_comp is not None:
        others.append(os_comp)
    models = models_read(facts)
    others += [model_component(m) for m in models]
    return _Parts(comp.python_components(packages, info), others, models, info, python)


def _root_component(subject: Subject, digest: str):
    """The BOM's subject: the image itself, or the environment/run as an application."""
    from cyclonedx.model.component import Component, ComponentType

    image = subject.manifest.facts.get("image")
    if isinstance(image, dict):
        return comp.image_component(image)
    return Component(
        type=ComponentType.APPLICATION if subject.run else ComponentType.PLATFORM,
        name=f"run {subject.run.run_id}" if subject.run else "python-environment",
        version=digest,
        bom_ref=f"prov:manifest:{digest}",
    )


def _metadata(subject: Subject, root, timestamp: datetime | None):
    from cyclonedx.model.bom import BomMetaData
    from cyclonedx.model.component import Component, ComponentType
    from cyclonedx.model.tool import ToolRepository

    m = subject.manifest
    digest = m.digest()
    props = [_prop("prov:manifest-digest", digest)]
    props += [_prop(f"prov:section-digest:{k}", v) for k, v in m.section_digests().items()]
    props.append(_prop("prov:subject", f"{subject.kind}: {subject.label}"))
    if subject.run:
        props += _run_properties(subject)
    tools = ToolRepository()
    tools.components.add(
        Component(type=ComponentType.APPLICATION, name="prov", version=prov_version(),
                  group="prov-llm", bom_ref="tool:prov")
    )
    meta = BomMetaData(component=root, tools=tools, properties=props)
    meta.timestamp = timestamp  # None: no wall-clock time in the output
    return meta


def _dependency_graph(bom, root, parts: _Parts) -> str:
    """Register every component's dependencies (Requires-Dist from installed metadata, where
    it can be read); returns the note that says which."""
    by_name = {c.name: c for c in parts.python}
    if parts.installed:
        env = marker_environment(parts.python_facts)
        graph = resolve_requires(parts.installed, set(by_name), env)
        for name in sorted(by_name):
            deps = [by_name[d] for d in graph.get(name, []) if d in by_name]
            bom.register_dependency(by_name[name], deps)
        note = (f"requires-dist: read from installed metadata for {len(parts.installed)} of "
                f"{len(parts.python)} Python packages")
    else:
        note = ("unavailable: the manifest records no Requires-Dist and its environment is "
                "not installed here")
        for c in parts.python:
            bom.register_dependency(c, [])
    bom.register_dependency(root, [*parts.python, *parts.others])
    return note


def _redact_properties(holders: list) -> None:
    """Every property value through the one redaction pass (`prov:direct-url:url`, image
    labels, a command): the SBOM is published, so nothing secret may ride in it."""
    for holder in holders:
        for prop in holder.properties:
            clean = redact_value(prop.name.rsplit(":", 1)[-1], prop.value or "")
            if clean != prop.value:
                prop.value = clean


def _run_properties(subject: Subject) -> list:
    run = subject.run
    assert run is not None
    props = [_prop("prov:run:id", run.run_id),
             _prop("prov:run:command", " ".join(redact_argv(list(run.argv))))]
    for name, value in (("started", run.started), ("ended", run.ended),
                        ("exit-status", run.exit_status)):
        if value is not None:
            props.append(_prop(f"prov:run:{name}", value))
    return props


def _formulation(subject: Subject) -> list[dict[str, Any]]:
    """The run as CycloneDX 1.6 `formulation` (the library has no model for it): one formula
    with one workflow whose single step executed the recorded command."""
    run = subject.run
    if run is None:
        return []
    digest = subject.manifest.digest()
    workflow: dict[str, Any] = {
        "bom-ref": f"prov:workflow:{run.run_id}",
        "uid": run.run_id,
        "name": "prov exec",
        "taskTypes": ["other"],
        "steps": [{"name": "exec",
                   "commands": [{"executed": " ".join(redact_argv(list(run.argv)))}]}],
        "properties": [{"name": "prov:manifest-digest", "value": digest}],
    }
    if run.started:
        workflow["timeStart"] = run.started
    if run.ended:
        workflow["timeEnd"] = run.ended
    if run.exit_status is not None:
        workflow["properties"].append({"name": "prov:run:exit-status",
                                       "value": str(run.exit_status)})
    for path, d in sorted(run.outputs.items()):
        workflow["properties"].append({"name": f"prov:output:{path}", "value": d})
    return [{"bom-ref": f"prov:formula:{run.run_id}", "workflows": [workflow]}]
