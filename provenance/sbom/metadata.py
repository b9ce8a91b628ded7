"""Installed Python metadata (Requires-Dist, licences) for a manifest taken of this interpreter.

A manifest only records names, versions and fingerprints; the dependency graph and licences
come from the distributions' METADATA, which can be read only where they are installed. We
read a distribution only when its version matches the manifest's, so an environment that
changed since the snapshot cannot leak into its SBOM.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import metadata
from typing import Any


@dataclass(frozen=True)
class DistInfo:
    requires: tuple[str, ...] = ()
    license_expression: str | None = None
    license_text: str | None = None
    license_classifiers: tuple[str, ...] = ()
    extras: tuple[str, ...] = field(default_factory=tuple)


def read_installed(packages: dict[str, Any]) -> dict[str, DistInfo]:
    """Normalised name -> DistInfo for each manifest package found installed at its location."""
    from packaging.utils import canonicalize_name

    locations = sorted({str(e.get("location")) for e in packages.values() if e.get("location")})
    found: dict[str, DistInfo] = {}
    for dist in metadata.distributions(path=locations):
        name = canonicalize_name(dist.metadata.get("Name") or "")
        entry = packages.get(name)
        if name in found or not isinstance(entry, dict):
            continue
        if dist.version != entry.get("version"):
            continue
        meta = dist.metadata
        classifiers = tuple(
            c.split("::")[-1].strip()
            for c in (meta.get_all("Classifier") or [])
            if c.startswith("License ::") and c.count("::") >= 2
        )
        text = (meta.get("License") or "").strip()
        found[name] = DistInfo(
            requires=tuple(meta.get_all("Requires-Dist") or ()),
            license_expression=(meta.get("License-Expression") or "").strip() or None,
            license_text=text if text and "\n" not in text and len(text) <= 100 else None,
            license_classifiers=classifiers,
            extras=tuple(meta.get_all("Provides-Extra") or ()),
        )
    return found


def marker_environment(python_facts: dict[str, Any]) -> dict[str, str]:
    """PEP 508 marker environment for the manifest's interpreter (this host's as a base)."""
    from packaging.markers import default_environment

    env = dict(default_environment())
    version = python_facts.get("version")
    if isinstance(version, str) and version.count(".") >= 1:
        env["python_full_version"] = version
        env["python_version"] = ".".join(version.split(".")[:2])
    impl = python_facts.get("implementation")
    if isinstance(impl, str):
        env["implementation_name"] = impl
    return env


def resolve_requires(
    info: dict[str, DistInfo], installed: set[str], env: dict[str, str]
) -> dict[str, list[str]]:
    """name -> sorted names of installed distributions it requires (extras not counted)."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    graph: dict[str, list[str]] = {}
    for name, dist in info.items():
        deps = set()
        for line in dist.requires:
            try:
                req = Requirement(line)
            except InvalidRequirement:
                continue
            if req.marker is not None and not req.marker.evaluate({**env, "extra": ""}):
                continue
            target = canonicalize_name(req.name)
            if target in installed and target != name:
                deps.add(target)
        graph[name] = sorted(deps)
    return graph
