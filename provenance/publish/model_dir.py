"""A model directory checked against the digests prov recorded for a run, or against an
OpenSSF model-signing signature (`model-signing` on PyPI; its sigstore bundle `model.sig`).

Files and digests as model-signing's "files" serialization has them: every regular file
below the directory, named by its POSIX path relative to it, with the sha256 of its bytes
(the probe's `model.files` digests are the same, tests/provenance/exec/probe checks it
against the library). Every file is hashed afresh: a verifier does not trust a cache keyed
by mtime. A symbolic link is followed (a Hugging Face snapshot is made of links to its
blobs); model-signing, with its default `allow_symlinks=false`, refuses such a directory.

The steps, numbered as they are reported:
1. the expected digests: the run's `model.files` (the files its processes read), or the
   in-toto statement inside the signature (predicate `https://model_signing/signature/v1.0`,
   serialization method `files`, hash `sha256`; shard serialization is refused);
2. with a signature and a public key: the DSSE signature over PAE(payloadType, payload),
   ECDSA with SHA-256/384/512 by the curve's size, as model-signing's key signer makes it;
   the statement's subject digest (model-signing's digest over the whole manifest) is not
   recomputed: every file it covers is checked in step 3;
3. the directory's files hashed and compared: differing, missing, and (against a
   signature, which lists every file) files the signature does not list.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from provenance.model.digests import file_sha256
from provenance.model.errors import ProvError

PREDICATE = "https://model_signing/signature/v1.0"
STATEMENT = "https://in-toto.io/Statement/v1"


@dataclass
class ModelCheck:
    """One source of expected digests (a run, or a signature) against the directory."""

    source: str
    expected: dict[str, str]  # relative path -> "sha256:<hex>"
    lists_every_file: bool  # a signature does; a run lists only the files it read
    ignored: tuple[str, ...] = ()
    signature: str = "not applicable"  # "verified", "NOT checked", or a failure
    matched: list[str] = field(default_factory=list)
    differing: dict[str, tuple[str, str]] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    unlisted: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return bool(self.differing or self.missing or self.unlisted
                    or self.signature.startswith("FAILED"))

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "match": not self.failed, "signature": self.signature,
                "matched": self.matched, "missing": self.missing, "unlisted": self.unlisted,
                "differing": {k: {"expected": a, "actual": b}
                              for k, (a, b) in self.differing.items()}}


def _listed(root: Path, ignored: tuple[str, ...]) -> list[str]:
    """Every file below `root` (links followed), POSIX-relative, minus the ignored paths."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        rel_dir = Path(dirpath).relative_to(root)
        dirnames[:] = sorted(d for d in dirnames if not _ignored(rel_dir / d, ignored))
        out += [(rel_dir / f).as_posix() for f in filenames
                if not _ignored(rel_dir / f, ignored) and os.path.isfile(Path(dirpath) / f)]
    return sorted(out)


def _ignored(rel: Path, ignored: tuple[str, ...]) -> bool:
    posix = rel.as_posix()
    return any(posix == p or posix.startswith(p.rstrip("/") + "/") for p in ignored)


def compare(root: Path, check: ModelCheck) -> ModelCheck:
    """Step 3: hash what is expected (and, against a signature, every file there is)."""
    present = set(_listed(root, check.ignored)) if check.lists_every_file else set()
    for name, want in sorted(check.expected.items()):
        path = root / name
        if not path.is_file():
            check.missing.append(name)
            continue
        got = file_sha256(path)
        if got == want:
            check.matched.append(name)
        else:
            check.differing[name] = (want, got)
        present.discard(name)
    check.unlisted = sorted(present)
    return check


def from_run(root: Path, run_id: str, facts: dict[str, Any]) -> ModelCheck:
    """Step 1 for a run: its `model.files`. A run that read several model directories
    keys each file `<directory name>/<path>`; only this directory's are checked then."""
    files = (facts.get("model") or {}).get("files") or {}
    if not isinstance(files, dict) or not files:
        raise ProvError(f"run {run_id} recorded no model files (no `model.files`)")
    prefix = root.name + "/"
    if any(k.startswith(prefix) for k in files) and not (root / root.name).exists():
        files = {k[len(prefix):]: v for k, v in files.items() if k.startswith(prefix)}
    expected = {k: str(v.get("sha256")) for k, v in files.items() if isinstance(v, dict)}
    return ModelCheck(f"run {run_id}", expected, lists_every_file=False)


def _statement(payload: bytes, path: Path) -> dict[str, Any]:
    from provenance.publish.dsse import load_strict_json

    doc = load_strict_json(payload, f"{path}: the signed statement")
    if not isinstance(doc, dict) or doc.get("_type") != STATEMENT:
        raise ProvError(f"{path}: the signed payload is not an in-toto Statement v1")
    if doc.get("predicateType") != PREDICATE:
        raise ProvError(f"{path}: predicateType {doc.get('predicateType')!r}, not {PREDICATE}")
    return doc


def _expected(predicate: Any, path: Path) -> tuple[dict[str, str], tuple[str, ...]]:
    ser = predicate.get("serialization") if isinstance(predicate, dict) else None
    if not isinstance(ser, dict) or ser.get("method") != "files" or ser.get(
            "hash_type") != "sha256":
        raise ProvError(f"{path}: serialization {ser!r}: only model-signing's `files` "
                        "method with sha256 gives per-file digests prov can check")
    expected = {}
    for r in predicate.get("resources") or []:
        if not (isinstance(r, dict) and isinstance(r.get("name"), str) and isinstance(
                r.get("digest"), str) and r.get("algorithm") == "sha256"):
            raise ProvError(f"{path}: a resource is not {{name, digest, algorithm: sha256}}")
        expected[r["name"]] = "sha256:" + r["digest"]
    ignored = tuple(p for p in ser.get("ignore_paths") or [] if isinstance(p, str))
    return expected, ignored


def from_signature(root: Path, path: Path, public_key_path: Path | None) -> ModelCheck:
    """Steps 1 and 2 for a model-signing signature (a sigstore bundle with a DSSE envelope)."""
    from provenance.model.inputs import read_input
    from provenance.publish.dsse import load_strict_json, parse

    bundle = load_strict_json(read_input(path, "json"), str(path))
    envelope = bundle.get("dsseEnvelope") if isinstance(bundle, dict) else None
    if not isinstance(envelope, dict):
        raise ProvError(f"{path}: not a model-signing signature (no dsseEnvelope)")
    opened = parse(json.dumps(envelope).encode())
    doc = _statement(opened.payload, path)
    expected, ignored = _expected(doc.get("predicate"), path)
    inside = path.resolve().parent == root.resolve() or root.resolve() in path.resolve().parents
    if inside:  # the signature sits in the directory it signs: model-signing's CLI skips it
        ignored += (path.resolve().relative_to(root.resolve()).as_posix(),)
    check = ModelCheck(f"signature {path}", expected, lists_every_file=True, ignored=ignored)
    check.signature = ("NOT checked (no --key)" if public_key_path is None
                       else _verify_ec(opened, public_key_path))
    return check


def _verify_ec(opened, key_path: Path) -> str:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    from provenance.model.inputs import read_input
    from provenance.publish.dsse import pae

    data = read_input(key_path, "key")
    if b"PRIVATE KEY" in data:
        raise ProvError(f"--key {key_path}: is a PRIVATE key; verify with the public key")
    try:
        key = serialization.load_pem_public_key(data)
    except ValueError as exc:
        raise ProvError(f"{key_path}: not a PEM public key ({exc})") from None
    if not isinstance(key, ec.EllipticCurvePublicKey):
        raise ProvError(f"{key_path}: not an elliptic-curve key (model-signing's key signer)")
    digest = {256: hashes.SHA256, 384: hashes.SHA384, 521: hashes.SHA512}.get(key.key_size)
    if digest is None:
        raise ProvError(f"{key_path}: curve {key.curve.name} is not one model-signing signs with")
    message = pae(opened.payload_type, opened.payload)
    for _, sig in opened.signatures:
        try:
            key.verify(sig, message, ec.ECDSA(digest()))
            return "verified"
        except InvalidSignature:
            continue
    return f"FAILED: no signature verifies with {key_path}"
