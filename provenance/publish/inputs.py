"""The small adapter between the run store (`prov exec`) and SBOM/publish.

Everything publish and sbom need from a run is in `RunInfo`; the store's own record format
stays the store's business and is read in one place, `run_info_from_record`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from provenance.model import Manifest
from provenance.model.errors import ProvError


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
    """A run (id or unique prefix) and its manifest from the store (`prov exec`)."""
    from provenance.resolve import resolve

    if len(ref) > 256 or not ref.isprintable():
        raise ProvError(f"--run {ref[:40]!r}...: not a run id (ids are short hex strings)")
    try:
        resolved = resolve(ref)
    except ProvError as exc:
        raise ProvError(f"--run {ref}: {exc}", exc.exit_code) from None
    if resolved.type != "run" or resolved.run is None:
        raise ProvError(f"--run {ref}: not a run (it names a {resolved.type})")
    return run_info_from_record(resolved.run.record), resolved.manifest


def _digests(entries: Any) -> dict[str, str]:
    out = {}
    if isinstance(entries, dict):
        for name, entry in entries.items():
            if isinstance(entry, dict) and isinstance(entry.get("digest"), str):
                out[str(name)] = entry["digest"]
    return out


def run_info_from_record(record: dict[str, Any]) -> RunInfo:
    """The store's run record (runners/supervisor.py) reduced to what publishing needs."""
    status = record.get("exit_status")
    return RunInfo(
        run_id=str(record["run_id"]),
        argv=tuple(str(a) for a in record.get("command") or ()),
        started=record.get("started_at"),
        ended=record.get("ended_at"),
        exit_status=status if isinstance(status, int) else None,
        manifest_digest=record.get("manifest_digest"),
        outputs=_digests(record.get("outputs")),
        logs=_digests(record.get("logs")),
        record=record,
    )
