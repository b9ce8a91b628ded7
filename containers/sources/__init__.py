"""Image sources: each turns a source string into a resolved image plus verified blobs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from containers.resolve import Blobs, Resolved


@dataclass
class Opened:
    """A source, opened: what it resolved to and where its blobs come from."""

    source: str
    resolved: Resolved
    blobs: Blobs
    reference: str | None = None  # name@sha256:... when a registry digest is known
    repo_tags: list[str] = field(default_factory=list)
    repo_digests: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    _cleanup: list[Any] = field(default_factory=list)

    def close(self) -> None:
        for fn in reversed(self._cleanup):
            fn()
        self._cleanup.clear()


def open_source(source: str, platform: str | None = None) -> Opened:
    from containers.reference import split_source

    kind, value = split_source(source)
    if kind == "docker-archive":
        from containers.sources.docker_archive import open_docker_archive

        return open_docker_archive(source, value, platform)
    if kind == "oci":
        from containers.sources.oci_layout import open_oci

        return open_oci(source, value, platform)
    if kind == "registry":
        from containers.sources.registry import open_registry

        return open_registry(source, value, platform)
    from containers.sources.daemon import open_daemon

    return open_daemon(source, value, platform)
