"""SBOM and audit summaries for the report, from the files `prov sbom` / `prov audit --json`
wrote (given with --sbom / --audit, or found beside a result as sbom*.json, audit*.json)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from provenance.model.errors import ProvError


def _read(path: Path) -> dict[str, Any]:
    from provenance.model.inputs import read_json

    doc = read_json(path, "json")  # one line for a FIFO, junk, or a 100k-deep document
    if not isinstance(doc, dict):
        raise ProvError(f"{path}: not a JSON object")
    return doc


def sbom_summary(path: Path) -> dict[str, Any]:
    doc = _read(path)
    if doc.get("bomFormat") != "CycloneDX":
        raise ProvError(f"{path}: not a CycloneDX SBOM")
    comps = doc.get("components") or []
    types = Counter(c.get("type", "?") for c in comps)
    meta = doc.get("metadata") or {}
    props = {p.get("name"): p.get("value") for p in meta.get("properties") or []}
    return {"file": str(path), "spec_version": doc.get("specVersion"),
            "serial": doc.get("serialNumber"), "components": len(comps),
            "by_type": dict(sorted(types.items())), "subject": props.get("prov:subject"),
            "vulnerabilities": len(doc.get("vulnerabilities") or [])}


def audit_summary(path: Path) -> dict[str, Any]:
    doc = _read(path)
    if "findings" not in doc or "audited" not in doc:
        raise ProvError(f"{path}: not a `prov audit --json` result")
    return {"file": str(path), "subject": doc.get("subject"), "backend": doc.get("backend"),
            "packages": doc.get("packages"), "audited": doc.get("audited"),
            "not_audited": doc.get("not_audited"), "findings": [
                {k: f.get(k) for k in ("name", "version", "id", "fix_versions")}
                for f in doc["findings"]]}


def find_beside(result_dir: Path | None, pattern: str) -> Path | None:
    if result_dir is None or not result_dir.is_dir():
        return None
    found = sorted(result_dir.glob(pattern))
    return found[0] if found else None
