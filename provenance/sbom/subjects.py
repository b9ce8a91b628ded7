"""The small adapter between the run store (`prov exec`) and SBOM/publish.

Everything publish and sbom need from a run is in `PublishedRun` (a projection of the
store's `RunRecord`, not the index row `provenance.store.RunInfo`); the record format
stays the store's business and is read in one place, `published_run`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from provenance.model import Manifest
from provenance.store.run_record import RunRecord


@dataclass(frozen=True)
class PublishedRun:
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
    run: PublishedRun | None = None
    # True when the manifest describes this very interpreter, so installed metadata
    # (Requires-Dist, licenses) may be read to enrich it.
    local: bool = False


@dataclass(frozen=True)
class PublishedResult:
    """A result as a bundle holds it: its name there (`results/NAME`) and its JSON object
    (None when it is not one: a CSV, an image). The model card reads its figures."""

    name: str
    doc: dict[str, Any] | None


def _digests(entries: Any) -> dict[str, str]:
    out = {}
    if isinstance(entries, dict):
        for name, entry in entries.items():
            if isinstance(entry, dict) and isinstance(entry.get("digest"), str):
                out[str(name)] = entry["digest"]
    return out


def published_run(record: RunRecord) -> PublishedRun:
    """The store's run record (`RunRecord`, validated by the store) reduced to what
    publishing needs; the record's document is shipped in bundles as stored."""
    return PublishedRun(
        run_id=record.run_id,
        argv=record.command,
        started=record.started_at,
        ended=record.ended_at,
        exit_status=record.exit_status,
        manifest_digest=record.manifest_digest,
        outputs=_digests(record.outputs),
        logs=_digests(record.logs),
        record=record.to_doc(),
    )
