"""`registry:HOST/REPO:TAG|@sha256:...`: the OCI distribution API, no daemon needed.

A tag is resolved to its index and manifest digests (this is how a moving `nightly` tag is
pinned), and every blob is read and re-hashed from the registry. Where the registry asks
for it, the one registry client (containers/registry.py) authenticates: a bearer token from
its realm (anonymous, or with credentials from the Docker config file, which are sent only
to the registry and its realm and never recorded). Plain http for loopback registries only.
"""

from __future__ import annotations

from containers.digest import VerifyingReader, check_digest, sha256_of
from containers.errors import ImageError
from containers.reference import Reference, parse_reference
from containers.registry import Registry
from containers.resolve import ACCEPT, MAX_DOCUMENT, resolve, verified_document
from containers.sources import Opened


class RegistryClient(Registry):
    """The pull side of the one registry client (containers/registry.py): manifests and
    blobs by digest, every byte re-hashed."""

    def __init__(self, ref: Reference, what: str) -> None:
        super().__init__(ref.host, ref.repository, what)
        self.ref = ref

    def manifest(self, reference: str) -> tuple[bytes, str, str]:
        """(bytes, media type, digest) of a manifest or index by tag or digest."""
        with self.request(f"/manifests/{reference}", accept=ACCEPT) as resp:
            data = resp.read(MAX_DOCUMENT + 1)
            media = resp.headers.get("Content-Type", "").split(";")[0]
            header_digest = resp.headers.get("Docker-Content-Digest")
        if len(data) > MAX_DOCUMENT:
            raise ImageError(f"{self.what}: manifest larger than {MAX_DOCUMENT} bytes")
        digest = sha256_of(data)
        if reference.startswith("sha256:") and digest != reference:
            raise ImageError(f"{self.what}: digest mismatch: asked {reference}, got {digest}")
        if header_digest and header_digest.startswith("sha256:") and header_digest != digest:
            raise ImageError(
                f"{self.what}: registry says {header_digest}, content hashes to {digest}"
            )
        return data, media, digest

    def document(self, digest: str, what: str) -> bytes:
        check_digest(digest, what)
        try:
            data, _, _ = self.manifest(digest)
            return data
        except ImageError:
            pass
        with self.request(f"/blobs/{digest}") as resp:
            data = resp.read(MAX_DOCUMENT + 1)
        return verified_document(data, digest, what)

    def open(self, digest: str, size: int | None, what: str) -> VerifyingReader:
        check_digest(digest, what)
        return VerifyingReader(self.request(f"/blobs/{digest}"), digest, size, what)


def open_registry(source: str, value: str, platform: str | None) -> Opened:
    ref = parse_reference(value)
    client = RegistryClient(ref, source)
    target = ref.digest or ref.tag or "latest"
    data, _media, digest = client.manifest(target)
    resolved = resolve(client, data, digest, source, platform)
    pinned = ref.pinned(resolved.index_digest or resolved.manifest_digest)
    return Opened(
        source=source,
        resolved=resolved,
        blobs=client,
        reference=pinned,
        repo_tags=[f"{ref.name}:{ref.tag}"] if ref.tag else [],
        repo_digests=[pinned],
    )


