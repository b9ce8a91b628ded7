"""Bundles as OCI artifacts in a registry, hanging off the image the run used.

Push (`prov publish ... --to registry:HOST/REPO[:TAG]`) through the one registry client,
`containers.Registry` (http for loopback hosts, https otherwise; token or Basic auth with the
Docker config's credentials, never recorded):
  1. blobs: the empty config `{}` and the bundle .tar.gz (monolithic POST+PUT uploads);
  2. an OCI image manifest with `artifactType` = BUNDLE_ARTIFACT_TYPE, one layer (the
     bundle) and `subject` = the image manifest the run used (looked up in the same repo);
  3. when the registry does not answer with `OCI-Subject` (no referrers API, e.g.
     distribution 2.x), the referrers tag schema fallback: the index tagged
     `sha256-<subject hex>` gets a descriptor of the new manifest.
Verify (`prov verify registry:HOST/REPO@DIGEST`) pulls the manifest and the bundle blob,
checks both digests, and hands the bundle to the ordinary numbered verification.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from containers import Registry, RegistryError
from provenance.model.errors import ProvError

BUNDLE_ARTIFACT_TYPE = "application/vnd.prov.bundle.v1"
BUNDLE_LAYER_TYPE = "application/vnd.prov.bundle.v1.tar+gzip"
EMPTY_TYPE = "application/vnd.oci.empty.v1+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
ACCEPT = ", ".join([OCI_MANIFEST, OCI_INDEX, DOCKER_MANIFEST,
                    "application/vnd.docker.distribution.manifest.list.v2+json"])


@dataclass(frozen=True)
class Target:
    host: str
    repository: str
    tag: str | None = None
    digest: str | None = None

    def client(self, push: bool = False) -> Registry:
        return Registry(self.host, self.repository, str(self), push=push)

    def __str__(self) -> str:
        ref = f"@{self.digest}" if self.digest else (f":{self.tag}" if self.tag else "")
        return f"registry:{self.host}/{self.repository}{ref}"


def parse_target(text: str) -> Target:
    if not text.startswith("registry:"):
        raise ProvError(f"{text}: expected registry:HOST/REPO[:TAG] or registry:HOST/REPO@DIGEST")
    rest = text[len("registry:"):]
    digest = None
    if "@" in rest:
        rest, digest = rest.split("@", 1)
        if not digest.startswith("sha256:") or len(digest) != 71:
            raise ProvError(f"{text}: the digest must be sha256:<64 hex>")
    host, slash, repo = rest.partition("/")
    if not slash or not repo or not host:
        raise ProvError(f"{text}: expected registry:HOST/REPO[:TAG]")
    tag = None
    last = repo.rsplit("/", 1)[-1]
    if ":" in last:
        repo, tag = repo.rsplit(":", 1)
    return Target(host, repo, tag, digest)


def _sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _push_blob(reg: Registry, data: bytes) -> dict[str, Any]:
    digest = _sha(data)
    try:
        with reg.request(f"/blobs/{digest}", "HEAD"):
            return {"digest": digest, "size": len(data)}
    except RegistryError as exc:
        if exc.status != 404:
            raise ProvError(f"{reg.what}: blob check failed: {_why(exc)}") from None
    try:
        with reg.request("/blobs/uploads/", "POST", b"") as resp:
            location = resp.headers["Location"]
        sep = "&" if "?" in location else "?"
        with reg.request(f"{location}{sep}digest={digest}", "PUT", data,
                         {"Content-Type": "application/octet-stream"}):
            pass
    except RegistryError as exc:
        raise ProvError(f"{reg.what}: blob upload refused: {_why(exc)} {exc.body[:200]!r}") \
            from None
    return {"digest": digest, "size": len(data)}


def _why(exc: RegistryError) -> str:
    """`HTTP 500`, or the client's one line when there was no HTTP answer to quote."""
    return f"HTTP {exc.status}" if exc.status is not None else str(exc)


def _put_manifest(reg: Registry, ref: str, body: bytes, media_type: str) -> Any:
    try:
        return reg.request(f"/manifests/{ref}", "PUT", body, {"Content-Type": media_type})
    except RegistryError as exc:
        raise ProvError(f"{reg.what}: manifest refused: {_why(exc)} {exc.body!r}") from None


def subject_descriptor(t: Target, digest: str, reg: Registry | None = None) -> dict[str, Any]:
    reg = reg or t.client()
    try:
        with reg.request(f"/manifests/{digest}", accept=ACCEPT) as r:
            body = r.read()
            media = r.headers.get("Content-Type", OCI_MANIFEST).split(";")[0]
    except RegistryError as exc:
        if exc.status in (None, 401, 403):
            raise  # unreachable, or access denied: the client's own line says which
        raise ProvError(f"the run's image {digest} is not in {t.host}/{t.repository} "
                        f"(HTTP {exc.status}); push the image there first") from None
    if _sha(body) != digest:
        raise ProvError(f"{t}: registry served {digest} with other content")
    return {"mediaType": media, "digest": digest, "size": len(body)}


def _json(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()


def push_bundle(archive: bytes, subject_digest: str, target: Target) -> tuple[str, str]:
    """(artifact manifest digest, how the referrer was recorded)."""
    reg = target.client(push=True)
    subject = subject_descriptor(target, subject_digest, reg)
    config = _push_blob(reg, b"{}")
    layer = _push_blob(reg, archive)
    manifest = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "artifactType": BUNDLE_ARTIFACT_TYPE,
        "config": {"mediaType": EMPTY_TYPE, **config},
        "layers": [{"mediaType": BUNDLE_LAYER_TYPE, **layer,
                    "annotations": {"org.opencontainers.image.title": "bundle.tar.gz"}}],
        "subject": subject,
    }
    body = _json(manifest)
    digest = _sha(body)
    with _put_manifest(reg, target.tag or digest, body, OCI_MANIFEST) as resp:
        native = resp.headers.get("OCI-Subject") == subject_digest
    if native:
        return digest, "referrers API"
    # Referrers tag schema (OCI distribution spec 1.1, for registries without the API).
    tag = subject_digest.replace(":", "-")
    index: dict[str, Any] = {"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": []}
    try:
        with reg.request(f"/manifests/{tag}", accept=OCI_INDEX) as r:
            existing = json.loads(r.read())
        if isinstance(existing, dict) and isinstance(existing.get("manifests"), list):
            index = existing
    except RegistryError as exc:
        if exc.status != 404:
            raise ProvError(f"{target}: referrers tag unreadable: {_why(exc)}") from None
    entry = {"mediaType": OCI_MANIFEST, "digest": digest, "size": len(body),
             "artifactType": BUNDLE_ARTIFACT_TYPE}
    if not any(m.get("digest") == digest for m in index["manifests"]):
        index["manifests"].append(entry)
    with _put_manifest(reg, tag, _json(index), OCI_INDEX):
        pass
    return digest, f"referrers tag {tag}"


def referrers(target: Target, subject_digest: str) -> list[str]:
    """Digests of prov bundles attached to an image (API first, then the tag schema)."""
    reg = target.client()
    for path in (f"/referrers/{subject_digest}",
                 f"/manifests/{subject_digest.replace(':', '-')}"):
        try:
            with reg.request(path, accept=OCI_INDEX) as r:
                doc = json.loads(r.read())
        except RegistryError as exc:
            if exc.status is None:
                raise
            continue
        except ValueError:
            continue
        found = [m["digest"] for m in doc.get("manifests", [])
                 if m.get("artifactType") == BUNDLE_ARTIFACT_TYPE]
        if found:
            return found
    return []


def pull_bundle(target: Target, dest: Path) -> dict[str, Any]:
    """Write the bundle archive of `target` (HOST/REPO@DIGEST) to `dest`; return the manifest."""
    if not target.digest:
        raise ProvError(f"{target}: give the artifact by digest (registry:HOST/REPO@sha256:…)")
    reg = target.client()
    try:
        with reg.request(f"/manifests/{target.digest}", accept=OCI_MANIFEST) as r:
            body = r.read()
    except RegistryError as exc:
        raise ProvError(f"{target}: not found in the registry ({_why(exc)})") from None
    if _sha(body) != target.digest:
        raise ProvError(f"{target}: registry served different content for this digest")
    manifest = json.loads(body)
    layers = [x for x in manifest.get("layers", []) if x.get("mediaType") == BUNDLE_LAYER_TYPE]
    if manifest.get("artifactType") != BUNDLE_ARTIFACT_TYPE or len(layers) != 1:
        raise ProvError(f"{target}: not a prov bundle artifact")
    try:
        with reg.request(f"/blobs/{layers[0]['digest']}") as r:
            data = r.read()
    except RegistryError as exc:
        raise ProvError(f"{target}: bundle blob missing ({_why(exc)})") from None
    if _sha(data) != layers[0]["digest"]:
        raise ProvError(f"{target}: bundle blob does not match its digest")
    dest.write_bytes(data)
    return manifest
