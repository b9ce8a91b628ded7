"""Offline audit against a local directory of OSV advisory records (`--osv-db DIR`).

Air-gapped clusters cannot reach a service; a mirrored OSV export can travel with them.
Only the PyPI ecosystem is read. A package is affected when its version is listed in
`versions`, or falls in an ECOSYSTEM range (introduced/fixed/last_affected events,
evaluated in order with `packaging.version`). The database's content digest and newest
`modified` time are recorded so the audit can be reproduced.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from provenance.audit.base import AuditBackend, AuditResult, Finding, Package
from provenance.model.errors import ProvError
from provenance.model.inputs import decode_text, parse_json, read_input, shown
from provenance.model.text import escape_surrogates


@dataclass(frozen=True)
class Advisory:
    id: str
    aliases: tuple[str, ...]
    summary: str
    modified: str
    affected: tuple[dict[str, Any], ...]  # PyPI entries only


def load_db(root: Path) -> tuple[dict[str, list[Advisory]], dict[str, Any]]:
    """name -> advisories, plus the database facts (digest, count, newest modified)."""
    from packaging.utils import canonicalize_name

    root = Path(root)
    if not root.is_dir():
        raise ProvError(f"--osv-db {root}: not a directory")
    files = sorted(p for p in root.rglob("*.json") if p.is_file())
    if not files:
        raise ProvError(f"--osv-db {root}: no OSV advisory records (*.json) in it")
    index: dict[str, list[Advisory]] = {}
    lines, newest, count = [], "", 0
    for path in files:
        rel = escape_surrogates(path.relative_to(root).as_posix())
        raw = read_input(path, "json")  # bounded, a regular file
        lines.append(f"{rel} {hashlib.sha256(raw).hexdigest()}")
        what = f"--osv-db: {shown(path.relative_to(root))}"
        # strict UTF-8; nesting bounded (a 100k-deep record is one line, not a
        # RecursionError); no lone surrogate; no 5,000-digit integer (an InputError each)
        doc = parse_json(decode_text(raw, what), what)
        if not isinstance(doc, dict) or not isinstance(doc.get("id"), str):
            raise ProvError(f"--osv-db: {rel}: not an OSV record (no id)")
        if doc.get("withdrawn"):
            continue
        count += 1
        modified = str(doc.get("modified", ""))
        newest = max(newest, modified)
        pypi = tuple(a for a in doc.get("affected") or [] if _is_pypi(a))
        adv = Advisory(
            id=doc["id"],
            aliases=tuple(sorted(str(x) for x in doc.get("aliases") or [])),
            summary=str(doc.get("summary") or doc.get("details") or "").split("\n")[0][:200],
            modified=modified,
            affected=pypi,
        )
        for name in sorted({canonicalize_name(a["package"]["name"]) for a in pypi}):
            index.setdefault(name, []).append(adv)
    digest = "sha256:" + hashlib.sha256("\n".join(lines).encode()).hexdigest()
    facts = {"path": str(root), "digest": digest, "records": count, "newest_modified": newest}
    return index, facts


def _is_pypi(entry: Any) -> bool:
    pkg = entry.get("package") if isinstance(entry, dict) else None
    return (
        isinstance(pkg, dict)
        and pkg.get("ecosystem") == "PyPI"
        and isinstance(pkg.get("name"), str)
    )


def _in_range(version, events: list[dict[str, Any]]) -> bool:
    """OSV ECOSYSTEM range semantics: walk sorted events, tracking affected state."""
    from packaging.version import InvalidVersion, Version

    def key(ev: dict[str, Any]):
        value = next(iter(ev.values()), "0")
        if value == "0":
            return Version("0")
        try:
            return Version(str(value))
        except InvalidVersion:
            return None

    parsed = [(key(ev), ev) for ev in events if isinstance(ev, dict) and ev]
    parsed = sorted(((k, ev) for k, ev in parsed if k is not None), key=lambda t: t[0])
    affected = False
    for at, ev in parsed:
        if "introduced" in ev:
            affected = affected or version >= at
        elif "fixed" in ev:
            affected = affected and version < at
        elif "last_affected" in ev:
            affected = affected and version <= at
    return affected


def matches(adv: Advisory, name: str, version) -> tuple[bool, tuple[str, ...]]:
    """(affected?, fix versions) for one package version."""
    from packaging.utils import canonicalize_name

    hit, fixes = False, set()
    for entry in adv.affected:
        if canonicalize_name(entry["package"]["name"]) != name:
            continue
        if str(version) in {str(v) for v in entry.get("versions") or []}:
            hit = True
        for rng in entry.get("ranges") or []:
            if not isinstance(rng, dict) or rng.get("type") != "ECOSYSTEM":
                continue
            events = rng.get("events") or []
            fixes.update(str(e["fixed"]) for e in events if isinstance(e, dict) and "fixed" in e)
            if _in_range(version, events):
                hit = True
    return hit, tuple(sorted(fixes))


class OsvDbBackend(AuditBackend):
    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def audit(self, packages: list[Package]) -> AuditResult:
        from packaging.version import InvalidVersion, Version

        index, facts = load_db(self.root)
        audited, findings, skipped = [], [], []
        for pkg in packages:
            try:
                version = Version(pkg.version)
            except InvalidVersion:
                skipped.append((pkg, "version is not PEP 440; cannot be compared"))
                continue
            audited.append(pkg)
            for adv in index.get(pkg.name, []):
                hit, fixes = matches(adv, pkg.name, version)
                if hit:
                    findings.append(Finding(pkg, adv.id, adv.aliases, adv.summary, fixes))
        findings.sort(key=lambda f: (f.package.name, f.id))
        return AuditResult(
            backend=f"osv-db {self.root}",
            audited=tuple(audited),
            findings=tuple(findings),
            skipped=tuple(skipped),
            database=facts,
        )
