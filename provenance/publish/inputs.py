"""The small adapter between the run store (`prov exec`) and SBOM/publish.

Everything publish and sbom need from a run is in `RunInfo`; the store's own record format
stays the store's business. Until the store exists in this build, `--run` fails with one
clear line instead of guessing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from provenance.errors import ProvError
from provenance.model import Manifest


@dataclass(frozen=True)
class RunInfo:
    run_id: str
    argv: tuple[str, ...]
    started: str | None = None  # RFC 3339
    ended: str | None = None
    exit_status: int | None = None
    manifest_digest: str | None = None
    outputs: dict[str, str] = field(default_factory=dict)  # path -> "sha256:..."
    logs: dict[str, str] = field(default_factory=dict)  # stream -> "sha256:..."
    record: dict[str, Any] = field(default_factory=dict)  # the raw record, shipped in bundles


@dataclass(frozen=True)
class Subject:
    """What an SBOM or a bundle is about: a manifest, plus the run that produced it if any."""

    manifest: Manifest
    label: str  # "environment", "image REF", "run ID", or the manifest path
    kind: str  # "environment" | "image" | "run" | "manifest"
    run: RunInfo | None = None
    # True when the manifest describes this very interpreter, so installed metadata
    # (Requires-Dist, licenses) may be read to enrich it.
    local: bool = False


def load_run(ref: str) -> tuple[RunInfo, Manifest]:
    """A run and its manifest from the store; a clear error while the store is absent."""
    try:
        from provenance import store  # noqa: F401  (provided by `prov exec`)
    except ImportError:
        raise ProvError(
            f"--run {ref}: this build of prov has no run store yet (prov exec); "
            "use --manifest FILE instead"
        ) from None
    return _load_from_store(ref)


def _load_from_store(ref: str) -> tuple[RunInfo, Manifest]:  # pragma: no cover - wired on merge
    raise ProvError(f"--run {ref}: reading runs from the store is not wired in this build")
