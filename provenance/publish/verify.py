"""Verify a bundle in numbered steps; each step has a verdict, the first failure decides.

The bundle is a closed world: every file in it is named and hashed by the statement, and
nothing else may be there.

Steps (numbered here and in the output, like sigstore-python's verifier):
  1. bundle opened: a directory or .tar.gz (read streaming, within size bounds, gzip CRC
     checked, nothing but NUL padding after the tar's end) of plain files only (no links,
     devices, duplicates) with one attestation; every file within its bound (bounds.py: by
     size before it is read, each document's parse by the memory estimate), else one line
     and exit 2
  2. envelope and signature: strict DSSE (unique keys, no unknown fields, canonical
     base64), payloadType, ed25519 over PAE with --key and the keyid it claims; without a
     trusted key this step FAILS unless --no-signature says authenticity is not wanted
  3. statement type: in-toto Statement v1, SLSA provenance v1 predicate, well-formed and
     uniquely named descriptors
  4. contents: every file in the bundle is a subject or byproduct and re-hashes to its
     digest; subjects live under results/
  5. run record and manifest: the manifest's identity digest recomputed; the statement's
     command, parameters, manifest and output digests agree with the bundled run record
  6. SBOM: strictly valid CycloneDX 1.6, and the whole component list (Python, Debian, GPU
     stack, OS, the models the run read with their model cards) is the one the bundled
     manifest and results give
  7. disclosure cards: every result declaring a KL figure has a strict, complete card, and
     every prov-result/1 result its own strict card
  8. exchange receipts: every receipt of a bound client's exchanges names a server run
     whose record is bundled, a manifest digest of that run's records (each manifest
     bundled, its identity digest recomputed) and its exchange's request and response
     digests; "skipped" when the bundle holds no exchanges
  9. model files: the run record's `model.files` are the manifest's (from which step 6
     rebuilt the SBOM's model components), and the statement lists each of them as a
     resolved dependency (sha256, BOM-Link to its SBOM component); with --model DIR, each
     file of the bundle's model component re-hashed in DIR; "skipped" when the run read no
     model and no directory was given
 10. receipt (only with --receipt FILE): an exchange of the bundle carries exactly it
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from provenance.model import kl
from provenance.model.digests import file_sha256, hex_of
from provenance.model.errors import ProvError
from provenance.publish.archive import extract_tar_gz, is_archive, safe_member_name
from provenance.publish.bounds import (
    MAX_DOCUMENT_BYTES,
    MAX_MEMBERS,
    BoundError,
    bound_of,
    check_document,
    check_size,
    check_statement,
)
from provenance.publish.bundle import SBOM_NAME, SIGNED_NAME, UNSIGNED_NAME
from provenance.publish.statement import PREDICATE_TYPE, STATEMENT_TYPE

PASS, FAIL, WARN, SKIP = "pass", "FAIL", "warn", "skipped"
NOT_AUTHENTICATED = ("authenticity NOT checked (--no-signature): the contents agree with the "
                     "statement, but anyone could have written both")


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
    authenticated: bool = False

    @property
    def failed(self) -> Step | None:
        return next((s for s in self.steps if s.verdict == FAIL), None)

    @property
    def headline(self) -> str | None:
        """The line to print first: a verified bundle whose signer was not checked."""
        return NOT_AUTHENTICATED if self.failed is None and not self.authenticated else None

    def to_json(self) -> dict[str, Any]:
        failed = self.failed
        return {
            "bundle": self.target,
            "verified": failed is None,
            "authenticity_checked": self.authenticated,
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
    "exchange receipts",
    "model files",
)
RECEIPT_STEP = "receipt"


class _Fail(Exception):
    pass


def _fail(step: Step, message: str) -> None:
    step.verdict = FAIL
    step.details.append(message)
    raise _Fail


def verify_bundle(target: str, key_path: Path | None = None,
                  no_signature: bool = False, receipt: dict | None = None,
                  model_dir: Path | None = None) -> Report:
    """Verify `target`; without `key_path` only `no_signature=True` lets it pass. With
    `receipt` (receipts.read_receipt's), a 10th step checks that one receipt; with
    `model_dir`, step 9 checks that directory against the bundle's model component."""
    report = Report(target, [Step(i + 1, n) for i, n in enumerate(NAMES)])
    if receipt is not None:
        report.steps.append(Step(len(NAMES) + 1, RECEIPT_STEP))
    tmp = None
    try:
        root = Path(target)
        if is_archive(root) and root.is_file():
            tmp = Path(tempfile.mkdtemp(prefix="prov-verify-"))
            try:
                extract_tar_gz(root, tmp)
            except BoundError:
                raise  # a file over its bound is not read at all: one line, exit 2
            except ProvError as exc:
                _fail(report.steps[0], str(exc))
            root = tmp
        _Verifier(report, root, key_path, no_signature, receipt, model_dir).run()
    except _Fail:
        pass
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return report


def bundle_files(root: Path) -> list[str]:
    """Every file under `root`, relative; a link or a non-regular file is refused, and so
    is a file over its bound (BoundError, before it is read) or more than MAX_MEMBERS."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                raise ProvError(f"{rel}: a symlink; a bundle holds plain files only")
            if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
                raise ProvError(f"{rel}: not a plain file")
            why = safe_member_name(rel)
            if why:
                raise ProvError(f"{rel!r}: {why}")
            if stat.S_ISREG(st.st_mode):
                check_size(rel, st.st_size)
                out.append(rel)
            if len(out) > MAX_MEMBERS:
                raise ProvError(f"bundle has more than {MAX_MEMBERS} files")
    return sorted(out)


def _is_descriptor(x: Any) -> bool:
    return (isinstance(x, dict) and isinstance(x.get("name"), str)
            and isinstance(x.get("digest"), dict)
            and isinstance(x["digest"].get("sha256"), str)
            and len(x["digest"]["sha256"]) == 64
            and all(c in "0123456789abcdef" for c in x["digest"]["sha256"]))


class _Verifier:
    """One verification: each `stepN` method fills its step or fails it."""

    def __init__(self, report: Report, root: Path, key_path: Path | None,
                 no_signature: bool, receipt: dict | None = None,
                 model_dir: Path | None = None) -> None:
        self.report, self.root, self.s = report, root, report.steps
        self.key_path, self.no_signature, self.receipt = key_path, no_signature, receipt
        self.model_dir = model_dir

    def run(self) -> None:
        self.step1_opened()
        self.step2_envelope()
        self.step3_statement()
        self.step4_contents()
        self.step5_run_and_manifest()
        self.step6_sbom()
        self.step7_cards()
        self.step8_exchanges()
        self.step9_models()
        if self.receipt is not None:
            self.step10_receipt()

    # 1. bundle opened
    def step1_opened(self) -> None:
        s = self.s[0]
        if not self.root.is_dir():
            _fail(s, f"{self.root}: not a bundle directory or .tar.gz")
        try:
            self.files = bundle_files(self.root)
        except BoundError:
            raise
        except (ProvError, OSError) as exc:
            _fail(s, str(exc))
        self._bound_documents()
        attestations = [n for n in (SIGNED_NAME, UNSIGNED_NAME) if n in self.files]
        if len(attestations) != 1:
            _fail(s, f"a bundle holds exactly one of {SIGNED_NAME} or {UNSIGNED_NAME} "
                     f"(found {len(attestations)})")
        self.attestation = attestations[0]
        s.verdict = PASS
        s.details.append(f"{len(self.files)} plain files, attestation {self.attestation}")

    def _bound_documents(self) -> None:
        """Each document a later step parses (all but results and the attestation, whose
        bounds are checked where they are read), read once here and refused if its parse
        would be over MAX_DOCUMENT_MEMORY: no step then holds more."""
        from provenance.model.inputs import read_input

        for name in self.files:
            if not name.startswith("results/") and name not in (SIGNED_NAME, UNSIGNED_NAME):
                check_document(name, read_input(self.root / name, "json", MAX_DOCUMENT_BYTES))

    # 2. envelope and signature
    def step2_envelope(self) -> None:
        from provenance.model.inputs import read_input
        from provenance.publish.dsse import INTOTO_PAYLOAD_TYPE, EnvelopeError, parse, verify

        s = self.s[1]
        limit, _ = bound_of(self.attestation)  # checked by size in step 1; bounded read here
        data = read_input(self.root / self.attestation, "json", limit)
        if self.attestation == UNSIGNED_NAME:
            self.payload = data
            if self.key_path is not None:
                _fail(s, "bundle is UNSIGNED, but --key was given")
            self._unauthenticated(s, "bundle is UNSIGNED: contents are checked, authorship "
                                     "is not")
            return
        try:
            opened = parse(data, check_statement)
        except EnvelopeError as exc:
            _fail(s, f"malformed DSSE envelope: {exc}")
        del data
        if opened.payload_type != INTOTO_PAYLOAD_TYPE:
            _fail(s, f"payloadType is {opened.payload_type!r}, not {INTOTO_PAYLOAD_TYPE}")
        self.payload = opened.payload
        if self.key_path is None:
            claimed = ", ".join(k for k, _ in opened.signatures)
            self._unauthenticated(s, f"signed by {claimed}; signature NOT checked")
            return
        from provenance.publish.keys import load_public

        try:
            kid = verify(opened, load_public(self.key_path))
        except EnvelopeError as exc:
            _fail(s, str(exc))
        s.verdict = PASS
        self.report.authenticated = True
        s.details.append(f"ed25519 signature over DSSE PAE verifies with {kid}")

    def _unauthenticated(self, s: Step, what: str) -> None:
        if not self.no_signature:
            _fail(s, f"{what}: give --key PUB (the signer's public key), or --no-signature "
                     "to check the contents without knowing who wrote them")
        s.verdict = WARN
        s.details.append(f"{what} (--no-signature)")

    # 3. statement type
    def step3_statement(self) -> None:
        from provenance.publish.dsse import EnvelopeError, load_strict_json

        s = self.s[2]
        try:
            st = load_strict_json(self.payload, "statement")
        except EnvelopeError as exc:
            _fail(s, str(exc))
        if not isinstance(st, dict) or st.get("_type") != STATEMENT_TYPE:
            _fail(s, f"_type is not {STATEMENT_TYPE}")
        if st.get("predicateType") != PREDICATE_TYPE:
            _fail(s, f"predicateType is {st.get('predicateType')!r}, not {PREDICATE_TYPE}")
        subjects, predicate = st.get("subject"), st.get("predicate")
        if not isinstance(subjects, list) or not subjects or not all(map(_is_descriptor,
                                                                         subjects)):
            _fail(s, "subject must be a non-empty list of {name, digest: {sha256: HEX}}")
        try:
            build = predicate["buildDefinition"]
            resolved, byproducts = build["resolvedDependencies"], \
                predicate["runDetails"]["byproducts"]
            assert isinstance(resolved, list) and isinstance(byproducts, list)
            assert all(map(_is_descriptor, byproducts)) and all(isinstance(d, dict)
                                                                 for d in resolved)
        except (KeyError, TypeError, AssertionError):
            _fail(s, "predicate lacks well-formed buildDefinition.resolvedDependencies or "
                     "runDetails.byproducts")
        names = [d["name"] for d in subjects + byproducts]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            _fail(s, f"named twice in the statement: {', '.join(dupes)}")
        bad = [n for n in names if safe_member_name(n)]
        if bad:
            _fail(s, f"unsafe path in statement: {bad[0]!r}")
        self.statement, self.subjects, self.byproducts = st, subjects, byproducts
        self.resolved, self.external = resolved, build.get("externalParameters") or {}
        s.verdict = PASS
        s.details.append(f"{STATEMENT_TYPE}, {PREDICATE_TYPE}, {len(subjects)} subjects")

    # 4. contents: the closed world
    def step4_contents(self) -> None:
        s = self.s[3]
        listed = {d["name"]: d["digest"]["sha256"] for d in self.subjects + self.byproducts}
        outside = [d["name"] for d in self.subjects if not d["name"].startswith("results/")]
        if outside:
            _fail(s, f"subject {outside[0]} is not under results/")
        present = set(self.files) - {self.attestation}
        unlisted = sorted(present - set(listed))
        if unlisted:
            _fail(s, f"files not covered by the statement: {', '.join(unlisted)}")
        missing = sorted(set(listed) - present)
        if missing:
            _fail(s, f"{missing[0]}: listed in the statement but missing from the bundle")
        for name, want in sorted(listed.items()):
            got = hex_of(file_sha256(self.root / name))  # in-toto digest sets: bare hex
            if got != want:
                _fail(s, f"{name}: sha256 is {got}, statement says {want}")
        for d in self.subjects:
            s.details.append(f"{d['name']} sha256:{d['digest']['sha256']} ok")
        s.details.append(f"{len(self.byproducts)} byproducts re-hashed ok; no unlisted files")
        s.verdict = PASS

    # 5. run record and manifest
    def step5_run_and_manifest(self) -> None:
        from provenance.publish.consistency import check_manifest, check_run_record

        s = self.s[4]
        try:
            self.manifest, self.manifest_digest = check_manifest(self.root, self.resolved,
                                                                 self.byproducts)
            s.details.append(f"manifest identity digest recomputed: {self.manifest_digest}")
            for line in check_run_record(self.root, self.statement, self.manifest_digest):
                s.details.append(line)
        except ProvError as exc:
            _fail(s, str(exc))
        s.verdict = PASS

    # 6. SBOM
    def step6_sbom(self) -> None:
        from provenance.publish.consistency import check_sbom

        s = self.s[5]
        if SBOM_NAME not in {d["name"] for d in self.byproducts}:
            _fail(s, f"{SBOM_NAME} is not among the statement's byproducts")
        try:
            s.details.append(check_sbom(self.root, self.manifest, self.statement))
        except ProvError as exc:
            _fail(s, str(exc))
        s.verdict = PASS

    # 7. KL disclosure cards
    def step7_cards(self) -> None:
        s = self.s[6]
        names = {d["name"] for d in self.byproducts}
        s.verdict = PASS
        for subj in self.subjects:
            doc = kl.read_json_object(self.root / subj["name"], subj["name"])
            if issues := kl.result_card_problems(doc):
                _fail(s, kl.not_strict_summary(subj["name"], issues))
            if doc and doc.get("format") == "prov-result/1":
                s.details.append(f"{subj['name']}: its disclosure card is strict")
            if not kl.declares_kl(doc):
                continue
            assert doc is not None
            issues = kl.problems(doc.get("kl_disclosure"), self.manifest_digest)
            if issues:
                _fail(s, kl.missing_summary(subj["name"], issues))
            card_rel = f"disclosures/{subj['name'].split('/', 1)[-1]}.kl-card.json"
            if card_rel not in names:
                _fail(s, f"{card_rel} is not among the statement's byproducts")
            from provenance.model.inputs import InputError, read_json

            try:
                card = read_json(self.root / card_rel, "json")
            except InputError as exc:
                _fail(s, str(exc))
            if card != doc["kl_disclosure"]:
                _fail(s, f"{card_rel} is not the card inside {subj['name']}")
            self.report.cards[subj["name"]] = doc["kl_disclosure"]
            s.details.append(f"{subj['name']}: all nine items disclosed")
        if not self.report.cards:
            s.details.append("no result declares a KL figure")

    # 8. exchange receipts
    def step8_exchanges(self) -> None:
        from provenance.publish.receipts import check_exchanges

        s = self.s[7]
        names = [d["name"] for d in self.byproducts]
        self.checked = None
        if not any(n.startswith("exchanges/") for n in names):
            s.details.append("no exchanges in this bundle (the run is bound to no server run)")
            return  # skipped, never pass: nothing was checked
        run_id = (self.statement["predicate"]["runDetails"].get("metadata") or {}) \
            .get("invocationId")
        try:
            self.checked = check_exchanges(self.root, names, run_id)
        except ProvError as exc:
            _fail(s, str(exc))
        servers = ", ".join(sorted(self.checked.servers))
        s.details.append(f"{len(self.checked.receipts)} receipt(s) name server run(s) {servers}: "
                         "records and manifests bundled, request and response digests are "
                         "their exchanges'")
        s.verdict = PASS

    # 9. model files
    def step9_models(self) -> None:
        from provenance.model.inputs import parse_json, read_text
        from provenance.publish.model_check import check_models

        s = self.s[8]
        try:
            sbom = parse_json(read_text(self.root / SBOM_NAME, "sbom"), SBOM_NAME)
            details = check_models(self.root, self.statement, self.manifest, sbom,
                                   self.model_dir)
        except ProvError as exc:
            _fail(s, str(exc))
        if details is None:
            s.details.append("no model files in this bundle (its manifest records no "
                             "model.files)")
            return  # skipped: nothing was checked
        s.details.extend(details)
        s.verdict = PASS

    # 10. one receipt a third party holds
    def step10_receipt(self) -> None:
        from provenance.publish.receipts import check_receipt

        s = self.s[9]
        if self.checked is None:
            _fail(s, "the bundle holds no exchanges, so no receipt of it can be checked")
        try:
            s.details.append(check_receipt(self.receipt, self.checked))
        except ProvError as exc:
            _fail(s, str(exc))
        s.verdict = PASS
