"""Verify a bundle in numbered steps; each step has a verdict, the first failure decides.

Steps (numbered here and in the output, like sigstore-python's verifier):
  1. bundle opened: a directory or .tar.gz with an attestation
  2. envelope and signature: DSSE shape, payloadType, ed25519 over PAE with --key
  3. statement type: in-toto Statement v1, SLSA provenance v1 predicate, well-formed subjects
  4. subjects re-hashed: every result file matches its sha256; no unlisted result files
  5. run records and manifests: re-hashed; manifest digest recomputed and matched
  6. SBOM: re-hashed, strictly valid CycloneDX 1.6, consistent with the manifest
  7. KL disclosure cards: every result declaring a KL figure has a complete card
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from provenance.model.errors import ProvError
from provenance.publish import kl
from provenance.publish.archive import extract_tar_gz, is_archive
from provenance.publish.bundle import SBOM_NAME, SIGNED_NAME, UNSIGNED_NAME, sha256_hex
from provenance.publish.statement import PREDICATE_TYPE, STATEMENT_TYPE

PASS, FAIL, WARN, SKIP = "pass", "FAIL", "warn", "skipped"


@dataclass
class Step:
    number: int
    name: str
    verdict: str = SKIP
    details: list[str] = field(default_factory=list)


@dataclass
class Report:
    target: str
    steps: list[Step]
    cards: dict[str, Any] = field(default_factory=dict)

    @property
    def failed(self) -> Step | None:
        return next((s for s in self.steps if s.verdict == FAIL), None)

    def to_json(self) -> dict[str, Any]:
        failed = self.failed
        return {
            "bundle": self.target,
            "verified": failed is None,
            "failed_step": failed.number if failed else None,
            "steps": [{"step": s.number, "name": s.name, "verdict": s.verdict,
                       "details": s.details} for s in self.steps],
            "kl_disclosures": self.cards,
        }


NAMES = (
    "bundle opened",
    "envelope and signature",
    "statement type",
    "subjects re-hashed",
    "run records and manifests",
    "SBOM valid and consistent",
    "KL disclosure cards",
)


class _Fail(Exception):
    pass


def verify_bundle(target: str, key_path: Path | None = None) -> Report:
    steps = [Step(i + 1, n) for i, n in enumerate(NAMES)]
    report = Report(target, steps)
    tmp = None
    try:
        root = Path(target)
        if is_archive(root) and root.is_file():
            tmp = Path(tempfile.mkdtemp(prefix="prov-verify-"))
            try:
                extract_tar_gz(root, tmp)
            except ProvError as exc:
                _fail(steps[0], str(exc))
            root = tmp
        _run(report, root, key_path)
    except _Fail:
        pass
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return report


def _fail(step: Step, message: str) -> None:
    step.verdict = FAIL
    step.details.append(message)
    raise _Fail


def _run(report: Report, root: Path, key_path: Path | None) -> None:
    s = report.steps
    # 1. bundle opened
    if not root.is_dir():
        _fail(s[0], f"{root}: not a bundle directory or .tar.gz")
    signed_path, unsigned_path = root / SIGNED_NAME, root / UNSIGNED_NAME
    if not signed_path.is_file() and not unsigned_path.is_file():
        _fail(s[0], f"no {SIGNED_NAME} or {UNSIGNED_NAME} in the bundle")
    s[0].verdict = PASS

    # 2. envelope and signature
    if signed_path.is_file():
        from provenance.publish.dsse import INTOTO_PAYLOAD_TYPE, EnvelopeError, parse, verify

        try:
            opened = parse(signed_path.read_bytes())
        except EnvelopeError as exc:
            _fail(s[1], f"malformed DSSE envelope: {exc}")
        if opened.payload_type != INTOTO_PAYLOAD_TYPE:
            _fail(s[1], f"payloadType is {opened.payload_type!r}, not {INTOTO_PAYLOAD_TYPE}")
        payload = opened.payload
        if key_path is None:
            s[1].verdict = WARN
            claimed = ", ".join(k for k, _ in opened.signatures)
            s[1].details.append(f"signed by {claimed}; signature NOT checked (give --key PUB)")
        else:
            from provenance.keys import load_public

            try:
                kid = verify(opened, load_public(key_path))
            except EnvelopeError as exc:
                _fail(s[1], str(exc))
            s[1].verdict = PASS
            s[1].details.append(f"ed25519 signature over DSSE PAE verifies with {kid}")
    else:
        payload = unsigned_path.read_bytes()
        if key_path is not None:
            _fail(s[1], "bundle is UNSIGNED, but --key was given")
        s[1].verdict = WARN
        s[1].details.append("bundle is UNSIGNED: contents are checked, authorship is not")

    # 3. statement type
    try:
        statement = json.loads(payload)
    except (ValueError, UnicodeDecodeError) as exc:
        _fail(s[2], f"statement is not JSON ({exc})")
    if not isinstance(statement, dict) or statement.get("_type") != STATEMENT_TYPE:
        _fail(s[2], f"_type is not {STATEMENT_TYPE}")
    if statement.get("predicateType") != PREDICATE_TYPE:
        _fail(s[2], f"predicateType is {statement.get('predicateType')!r}, not {PREDICATE_TYPE}")
    subjects = statement.get("subject")
    predicate = statement.get("predicate")
    if not isinstance(subjects, list) or not subjects or not all(_is_descriptor(x)
                                                                  for x in subjects):
        _fail(s[2], "subject must be a non-empty list of {name, digest: {sha256}}")
    if not isinstance(predicate, dict):
        _fail(s[2], "predicate is not an object")
    try:
        build = predicate["buildDefinition"]
        resolved = build["resolvedDependencies"]
        byproducts = predicate["runDetails"]["byproducts"]
        assert isinstance(resolved, list) and isinstance(byproducts, list)
        assert all(_is_descriptor(b) for b in byproducts)
    except (KeyError, TypeError, AssertionError):
        _fail(s[2], "predicate lacks buildDefinition.resolvedDependencies or runDetails.byproducts")
    s[2].verdict = PASS
    s[2].details.append(f"{STATEMENT_TYPE}, {PREDICATE_TYPE}, {len(subjects)} subjects")

    # 4. subjects re-hashed
    listed = set()
    for subj in subjects:
        name = subj["name"]
        listed.add(name)
        problem = _rehash(root, name, subj["digest"]["sha256"])
        if problem:
            _fail(s[3], problem)
        s[3].details.append(f"{name} sha256:{subj['digest']['sha256'][:16]}… ok")
    results_dir = root / "results"
    extra = sorted(
        p.relative_to(root).as_posix() for p in results_dir.rglob("*") if p.is_file()
    ) if results_dir.is_dir() else []
    unlisted = [p for p in extra if p not in listed]
    if unlisted:
        _fail(s[3], f"result files not covered by the statement: {', '.join(unlisted)}")
    s[3].verdict = PASS

    # 5. run records and manifests
    by_name = {b["name"]: b for b in byproducts}
    manifest_dep = next((d for d in resolved if isinstance(d, dict)
                         and d.get("name") == "manifest"), None)
    if manifest_dep is None:
        _fail(s[4], "statement names no manifest in resolvedDependencies")
    claimed_digest = "sha256:" + str(manifest_dep.get("digest", {}).get("sha256", ""))
    manifest_rel = str(manifest_dep.get("uri", ""))
    for name in sorted(by_name):
        if name.startswith(("runs/", "manifests/")):
            problem = _rehash(root, name, by_name[name]["digest"]["sha256"])
            if problem:
                _fail(s[4], problem)
            s[4].details.append(f"{name} re-hashed ok")
    if manifest_rel not in by_name:
        _fail(s[4], f"manifest {manifest_rel} is not among the statement's byproducts")
    from provenance.model import Manifest, ManifestError

    try:
        manifest = Manifest.read(root / manifest_rel)
    except ManifestError as exc:
        _fail(s[4], str(exc))
    if manifest.digest() != claimed_digest:
        _fail(s[4], f"manifest digest recomputed as {manifest.digest()}, statement says "
                    f"{claimed_digest}")
    s[4].details.append(f"manifest digest recomputed: {claimed_digest}")
    s[4].verdict = PASS

    # 6. SBOM
    if SBOM_NAME not in by_name:
        _fail(s[5], f"{SBOM_NAME} is not among the statement's byproducts")
    problem = _rehash(root, SBOM_NAME, by_name[SBOM_NAME]["digest"]["sha256"])
    if problem:
        _fail(s[5], problem)
    sbom_text = (root / SBOM_NAME).read_text(encoding="utf-8", errors="replace")
    from provenance.sbom import validate

    try:
        validate(sbom_text)
    except ProvError as exc:
        _fail(s[5], str(exc))
    for problem in _sbom_consistency(json.loads(sbom_text), manifest):
        _fail(s[5], problem)
    s[5].verdict = PASS
    s[5].details.append("strictly valid CycloneDX 1.6; manifest digest and Python packages agree")

    # 7. KL disclosure cards
    s[6].verdict = PASS
    for subj in subjects:
        doc = kl.read_json_object(root / subj["name"])
        if not kl.declares_kl(doc):
            continue
        short = subj["name"].split("/", 1)[-1]
        issues = kl.problems(doc.get("kl_disclosure"), claimed_digest)
        if issues:
            _fail(s[6], kl.missing_summary(subj["name"], issues))
        card_rel = f"disclosures/{short}.kl-card.json"
        if card_rel not in by_name:
            _fail(s[6], f"{card_rel} is not among the statement's byproducts")
        problem = _rehash(root, card_rel, by_name[card_rel]["digest"]["sha256"])
        if problem:
            _fail(s[6], problem)
        report.cards[subj["name"]] = doc["kl_disclosure"]
        s[6].details.append(f"{subj['name']}: all nine items disclosed")
    if not report.cards:
        s[6].details.append("no result declares a KL figure")


def _is_descriptor(x: Any) -> bool:
    return (isinstance(x, dict) and isinstance(x.get("name"), str)
            and isinstance(x.get("digest"), dict)
            and isinstance(x["digest"].get("sha256"), str))


def _rehash(root: Path, rel: str, expected_hex: str) -> str | None:
    if rel.startswith("/") or ".." in Path(rel).parts:
        return f"{rel}: unsafe path in statement"
    path = root / rel
    if not path.is_file():
        return f"{rel}: listed in the statement but missing from the bundle"
    actual = sha256_hex(path.read_bytes())
    if actual != expected_hex:
        return f"{rel}: sha256 is {actual}, statement says {expected_hex}"
    return None


def _sbom_consistency(doc: dict[str, Any], manifest) -> list[str]:
    from provenance.sbom.metadata import normalize

    digest = manifest.digest()
    props = {p.get("name"): p.get("value") for p in doc.get("metadata", {}).get("properties", [])}
    out = []
    if props.get("prov:manifest-digest") != digest:
        out.append(f"SBOM names manifest {props.get('prov:manifest-digest')}, bundle has {digest}")
    pkgs = manifest.get("python.packages") or {}
    want = {(normalize(str(v.get("name", k))), str(v["version"])) for k, v in pkgs.items()
            if isinstance(v, dict) and "version" in v}
    have = {(c["name"], c.get("version")) for c in doc.get("components", [])
            if str(c.get("purl", "")).startswith("pkg:pypi/")}
    if want != have:
        out.append(f"SBOM Python components differ from the manifest: "
                   f"{len(want - have)} missing, {len(have - want)} extra")
    return out
