"""`prov publish`: results + run records + manifests + SBOM + attestation, as one bundle.

Layout (a directory, or the same tree as a deterministic .tar.gz):
    results/<name>                 the result files (the statement's subjects)
    runs/<run id>.json             run records
    manifests/<digest hex>.json    the manifests the runs recorded
    sbom.cdx.json                  CycloneDX 1.6 SBOM of the manifest
    disclosures/<name>.kl-card.json  KL disclosure cards, copied out of their results
    exchanges/<client run id>.json the exchanges of a client run bound to server runs, with
                                   their receipts (served.py); the server runs' records and
                                   manifests then lie under runs/ and manifests/ too
    attestation.dsse.json          DSSE envelope (signed), or
    attestation.intoto.json        the bare statement (unsigned)
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from provenance.model import kl
from provenance.model.atomic import replace_dir
from provenance.model.errors import ProvError
from provenance.model.inputs import check_output, read_input, shown
from provenance.model.redact import redact_record, secrets_of_run
from provenance.publish.archive import is_archive, safe_member_name, write_tar_gz
from provenance.publish.bounds import SIGNED_NAME, UNSIGNED_NAME, check_size, check_statement
from provenance.publish.statement import build_statement, descriptor
from provenance.sbom import PublishedResult, Subject, models_read

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


def _utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # an undecodable byte, kept by Python as a surrogate
        return False
    return True


def check_results(results: list[Path], manifest_digest: str) -> dict[str, dict]:
    """name -> KL card for each result that declares a KL figure; refuses incomplete cards."""
    names: set[str] = set()
    cards: dict[str, dict] = {}
    refusals = []
    for path in results:
        if not os.path.lexists(path):
            raise ProvError(f"{shown(path)}: no such result file")
        if path.name in names:
            raise ProvError(f"two results named {path.name}; rename one")
        if safe_member_name(path.name) or not _utf8(path.name):
            raise ProvError(f"result {shown(path)}: its name must be printable UTF-8 (it "
                            "becomes results/NAME in the bundle and the statement)")
        names.add(path.name)
        doc = kl.read_json_object(path)
        if kl.declares_kl(doc):
            issues = kl.problems(doc.get("kl_disclosure"), manifest_digest)
            if issues:
                refusals.append(kl.missing_summary(path.name, issues))
            else:
                cards[path.name] = doc["kl_disclosure"]
        if issues := kl.result_card_problems(doc):
            refusals.append(kl.not_strict_summary(path.name, issues))
    if refusals:
        raise ProvError("refusing to publish: " + " | ".join(refusals))
    return cards


def check_recorded(contents: dict[Path, bytes], run, allow: bool) -> list[str]:
    """Names of results that the run did not record as outputs. Refused unless `allow`:
    a bundle `--run R` must not sign a file that R did not write (a later run may have
    overwritten it)."""
    if run is None:
        return []
    recorded = set(run.outputs.values())
    odd = [p for p, data in contents.items() if "sha256:" + sha256_hex(data) not in recorded]
    if odd and not allow:
        details = []
        for p in odd:
            was = next((d for o, d in run.outputs.items() if Path(o).name == p.name), None)
            details.append(f"{p} (the run recorded {was})" if was else str(p))
        raise ProvError(f"run {run.run_id} did not record these results as outputs: "
                        f"{'; '.join(details)}; publish them from the run that wrote them, "
                        "or say --allow-unrecorded (recorded in the statement)")
    return [f"results/{p.name}" for p in odd]


def check_no_secrets(contents: dict[Path, bytes]) -> None:
    """A result is signed as it is written, so it cannot be redacted: one that holds a value
    prov hides as secret in this environment (an environment variable's value hidden by its
    name or shape: model.redact.secrets_of_run) or a private key block is refused."""
    known = secrets_of_run(os.environ, [])
    odd = [p.name for p, data in contents.items()
           if known.spans(data) or b"PRIVATE KEY-----" in data or b"PRIVATE KEY BLOCK-----" in data]
    if odd:
        raise ProvError(f"refusing to publish {', '.join(odd)}: it holds a secret (a value "
                        "prov redacts from this environment, or a private key); remove it")


def _check_dependencies(dependencies: dict[str, str]) -> None:
    """`model:` names are the run's own model files (written from its record, never from
    --dependency), so a dependency of that name could pass for one."""
    taken = sorted(n for n in dependencies if n.startswith("model:"))
    if taken:
        raise ProvError(f"--dependency {taken[0]}: names starting with 'model:' are the model "
                        "files the run read, which prov lists itself; choose another name")


def _check_out(out: Path, force: bool) -> None:
    if out.exists() and not is_archive(out) and not out.is_dir():
        raise ProvError(f"--out {out}: exists and is not a bundle directory")
    if is_archive(out):
        check_output(out)
    if out.exists() and not force:
        raise ProvError(f"{out} exists; use --force to replace it")
    if not out.parent.is_dir():
        raise ProvError(f"{out.parent}: no such directory")


class _Tree:
    """The bundle being built: each file written once, its descriptor returned."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.names: set[str] = set()

    def put(self, rel: str, data: bytes, media: str | None = None) -> dict:
        check_size(rel, len(data))  # never a bundle that verify would refuse
        self.names.add(rel)
        target = self.root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        return descriptor(rel, sha256_hex(data), media_type=media or "")


def _byproducts(tree: _Tree, subject: Subject, cards: dict[str, dict],
                results: list[PublishedResult]) -> tuple[list[dict], str]:
    """Manifest (first), run record (redacted), SBOM and KL cards; and the SBOM's serial
    number (the statement links each model file to its component there)."""
    from provenance.sbom import build_bom, render

    m = subject.manifest
    hexd = m.digest().split(":", 1)[1]
    out = [tree.put(f"manifests/{hexd}.json", m.to_json().encode(), "application/json")]
    if subject.run is not None:
        rec = redact_record(subject.run.record or {"run_id": subject.run.run_id})
        out.append(tree.put(f"runs/{subject.run.run_id}.json", _json_bytes(rec),
                            "application/json"))
    built = build_bom(subject, results=results)
    sbom_text = render(built)
    out.append(tree.put(SBOM_NAME, sbom_text.encode(), "application/vnd.cyclonedx+json"))
    for name, card in sorted(cards.items()):
        out.append(tree.put(f"disclosures/{name}.kl-card.json", _json_bytes(card),
                            "application/json"))
    if subject.run is not None:
        out.extend(_served(tree, subject.run.record))
    return out, str(built.bom.serial_number)


def _served(tree: _Tree, record: dict) -> list[dict]:
    """A bound client's exchanges, and each server run's record and manifests; a manifest
    the bundle already holds (a server with the client's very environment) is not doubled."""
    from provenance.publish.served import collect

    served = collect(record)
    if served is None:
        return []
    out = []
    for server in served.servers:
        rel = f"runs/{server.run_id}.json"
        if rel in tree.names:
            raise ProvError(f"run {server.run_id} is its own server; nothing to bind")
        out.append(tree.put(rel, _json_bytes(redact_record(server.record)), "application/json"))
        for digest, manifest in server.manifests.items():
            rel = f"manifests/{digest.split(':', 1)[1]}.json"
            if rel not in tree.names:
                out.append(tree.put(rel, manifest.to_json().encode(), "application/json"))
    rel = f"exchanges/{record.get('run_id')}.json"
    out.append(tree.put(rel, _json_bytes(served.exchanges), "application/json"))
    return out


def publish(
    results: list[Path],
    subject: Subject,
    out: Path,
    key_path: Path | None = None,
    parameters: dict[str, str] | None = None,
    dependencies: dict[str, str] | None = None,
    force: bool = False,
    allow_unrecorded: bool = False,
) -> Published:
    from provenance.sbom import prov_version

    if not results:
        raise ProvError("nothing to publish: give at least one RESULT file")
    out = Path(out)
    _check_out(out, force)
    private = None
    if key_path is not None:
        from provenance.publish.keys import load_private

        private = load_private(key_path)
    cards = check_results(results, subject.manifest.digest())
    contents = {p: read_input(p, "result") for p in results}
    check_no_secrets(contents)
    unrecorded = check_recorded(contents, subject.run, allow_unrecorded)
    models = models_read(subject.manifest.facts)
    _check_dependencies(dependencies or {})

    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        tree = _Tree(work / "bundle")
        subjects = [tree.put(f"results/{p.name}", data) for p, data in contents.items()]
        published = [PublishedResult(f"results/{p.name}", kl.json_object(data, f"result {p}"))
                     for p, data in contents.items()]
        byproducts, serial = _byproducts(tree, subject, cards, published)
        statement = build_statement(subjects, subject, byproducts, parameters or {},
                                    dependencies or {}, prov_version(),
                                    byproducts[0]["digest"]["sha256"], unrecorded,
                                    models, serial)
        payload = _json_bytes(statement)
        check_statement(len(payload))
        key_id = None
        if private is not None:
            from provenance.publish.dsse import sign
            from provenance.publish.keys import key_id as kid

            tree.put(SIGNED_NAME, _json_bytes(sign(payload, private)))
            key_id = kid(private.public_key())
        else:
            tree.put(UNSIGNED_NAME, payload)
        if is_archive(out):
            write_tar_gz(tree.root, out)
        else:
            replace_dir(tree.root, out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return Published(out, private is not None, key_id, len(subjects), len(cards))
