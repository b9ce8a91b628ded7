"""`prov publish`: results + run records + manifests + SBOM + attestation, as one bundle.

Layout (a directory, or the same tree as a deterministic .tar.gz):
    results/<name>                 the result files (the statement's subjects)
    runs/<run id>.json             run records
    manifests/<digest hex>.json    the manifests the runs recorded
    sbom.cdx.json                  CycloneDX 1.6 SBOM of the manifest
    disclosures/<name>.kl-card.json  KL disclosure cards, copied out of their results
    attestation.dsse.json          DSSE envelope (signed), or
    attestation.intoto.json        the bare statement (unsigned)
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from provenance.model.atomic import replace_dir
from provenance.model.errors import ProvError
from provenance.publish import kl
from provenance.publish.archive import is_archive, write_tar_gz
from provenance.publish.inputs import Subject
from provenance.publish.statement import build_statement, descriptor

SIGNED_NAME = "attestation.dsse.json"
UNSIGNED_NAME = "attestation.intoto.json"
SBOM_NAME = "sbom.cdx.json"


@dataclass(frozen=True)
class Published:
    path: Path
    signed: bool
    key_id: str | None
    subjects: int
    kl_cards: int


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _json_bytes(doc) -> bytes:
    return (json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def check_results(results: list[Path], manifest_digest: str) -> dict[str, dict]:
    """name -> KL card for each result that declares a KL figure; refuses incomplete cards."""
    names: set[str] = set()
    cards: dict[str, dict] = {}
    refusals = []
    for path in results:
        if not path.is_file():
            raise ProvError(f"{path}: no such result file")
        if path.name in names:
            raise ProvError(f"two results named {path.name}; rename one")
        names.add(path.name)
        doc = kl.read_json_object(path)
        if kl.declares_kl(doc):
            issues = kl.problems(doc.get("kl_disclosure"), manifest_digest)
            if issues:
                refusals.append(kl.missing_summary(path.name, issues))
            else:
                cards[path.name] = doc["kl_disclosure"]
    if refusals:
        raise ProvError("refusing to publish: " + " | ".join(refusals))
    return cards


def publish(
    results: list[Path],
    subject: Subject,
    out: Path,
    key_path: Path | None = None,
    parameters: dict[str, str] | None = None,
    dependencies: dict[str, str] | None = None,
    force: bool = False,
) -> Published:
    from provenance.sbom import build_bom, render
    from provenance.sbom.build import prov_version

    if not results:
        raise ProvError("nothing to publish: give at least one RESULT file")
    out = Path(out)
    if out.exists() and not force:
        raise ProvError(f"{out} exists; use --force to replace it")
    if not out.parent.is_dir():
        raise ProvError(f"{out.parent}: no such directory")
    private = None
    if key_path is not None:
        from provenance.keys import load_private

        private = load_private(key_path)
    m = subject.manifest
    digest = m.digest()
    cards = check_results(results, digest)

    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        tree = work / "bundle"
        byproducts = []

        def put(rel: str, data: bytes, media: str | None = None) -> dict:
            target = tree / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            desc = descriptor(rel, sha256_hex(data))
            if media:
                desc["mediaType"] = media
            return desc

        subjects = [put(f"results/{p.name}", p.read_bytes()) for p in results]
        hexd = digest.split(":", 1)[1]
        byproducts.append(put(f"manifests/{hexd}.json", m.to_json().encode(), "application/json"))
        if subject.run is not None:
            rec = subject.run.record or {"run_id": subject.run.run_id}
            byproducts.append(put(f"runs/{subject.run.run_id}.json", _json_bytes(rec),
                                  "application/json"))
        sbom_text = render(build_bom(subject))
        byproducts.append(put(SBOM_NAME, sbom_text.encode(), "application/vnd.cyclonedx+json"))
        for name, card in sorted(cards.items()):
            byproducts.append(put(f"disclosures/{name}.kl-card.json", _json_bytes(card),
                                  "application/json"))
        statement = build_statement(subjects, subject, byproducts, parameters or {},
                                    dependencies or {}, prov_version())
        payload = _json_bytes(statement)
        key_id = None
        if private is not None:
            from provenance.keys import key_id as kid
            from provenance.publish.dsse import sign

            envelope = sign(payload, private)
            (tree / SIGNED_NAME).write_bytes(_json_bytes(envelope))
            key_id = kid(private.public_key())
        else:
            (tree / UNSIGNED_NAME).write_bytes(payload)

        if is_archive(out):
            write_tar_gz(tree, out)
        else:
            replace_dir(tree, out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return Published(out, private is not None, key_id, len(subjects), len(cards))
