"""`registry:HOST/REPO:TAG|@sha256:...`: the OCI distribution API, no daemon needed.

A tag is resolved to its index and manifest digests (this is how a moving `nightly` tag is
pinned), and every blob is read and re-hashed from the registry. Where the registry asks
for it, a bearer token is fetched from its realm (anonymous, or with credentials from the
Docker config file, which are sent only to that realm and never recorded). Plain http is
used for loopback registries only.
"""

from __future__ import annotations

import base64
import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from containers.digest import VerifyingReader, check_digest, sha256_of
from containers.errors import ImageError
from containers.reference import Reference, parse_reference
from containers.resolve import ACCEPT, MAX_DOCUMENT, resolve, verified_document
from containers.sources import Opened

TIMEOUT = 60
_LOOPBACK = ("127.0.0.1", "localhost", "[::1]")


def _docker_config_auth(host: str) -> str | None:
    """`user:password` for `host` from ~/.docker/config.json (or $DOCKER_CONFIG), if any."""
    base = os.environ.get("DOCKER_CONFIG") or str(Path.home() / ".docker")
    try:
        doc = json.loads((Path(base) / "config.json").read_text())
    except (OSError, ValueError):
        return None
    auths = doc.get("auths") if isinstance(doc, dict) else None
    if not isinstance(auths, dict):
        return None
    names = [host, f"https://{host}", f"http://{host}"]
    if host == "docker.io":
        names += ["https://index.docker.io/v1/", "index.docker.io"]
    for name in names:
        entry = auths.get(name)
        if isinstance(entry, dict) and isinstance(entry.get("auth"), str):
            try:
                return base64.b64decode(entry["auth"]).decode()
            except (ValueError, UnicodeDecodeError):
                return None
    return None


def _challenge(header: str) -> tuple[str, dict[str, str]]:
    scheme, _, rest = header.strip().partition(" ")
    params = dict(re.findall(r'(\w+)="([^"]*)"', rest))
    return scheme.lower(), params


class RegistryClient:
    def __init__(self, ref: Reference, what: str) -> None:
        self.ref = ref
        self.what = what
        host = "registry-1.docker.io" if ref.host == "docker.io" else ref.host
        loopback = host.split(":")[0] in _LOOPBACK or host.startswith("[::1]")
        self.base = f"{'http' if loopback else 'https'}://{host}/v2/{ref.repository}"
        self._auth: str | None = None  # the Authorization header, once negotiated
        self._creds = _docker_config_auth(ref.host)

    def _request(self, url: str, accept: str | None = None, method: str = "GET"):
        headers = {"User-Agent": "prov"}
        if accept:
            headers["Accept"] = accept
        for attempt in range(2):
            req = urllib.request.Request(url, headers=dict(headers), method=method)
            if self._auth:
                # unredirected: a blob redirect to a CDN must not carry the registry token
                req.add_unredirected_header("Authorization", self._auth)
            try:
                return urllib.request.urlopen(req, timeout=TIMEOUT)
            except urllib.error.HTTPError as exc:
                if exc.code == 401 and attempt == 0 and self._negotiate(exc):
                    continue
                raise ImageError(self._http_message(exc, url)) from None
            except (urllib.error.URLError, OSError) as exc:
                reason = getattr(exc, "reason", exc)
                where = url.split("/v2/")[0]
                raise ImageError(f"{self.what}: cannot reach {where}: {reason}") from None
        raise ImageError(f"{self.what}: unauthorized")

    def _http_message(self, exc: urllib.error.HTTPError, url: str) -> str:
        if exc.code == 404:
            return f"{self.what}: not found in the registry ({url.split('/v2/')[-1]})"
        if exc.code in (401, 403):
            hint = "" if self._creds else " (no credentials for it in the Docker config)"
            return f"{self.what}: access denied by the registry{hint}"
        return f"{self.what}: registry answered HTTP {exc.code}"

    def _negotiate(self, exc: urllib.error.HTTPError) -> bool:
        scheme, params = _challenge(exc.headers.get("WWW-Authenticate", ""))
        if scheme == "basic":
            if not self._creds:
                return False
            self._auth = "Basic " + base64.b64encode(self._creds.encode()).decode()
            return True
        if scheme != "bearer" or "realm" not in params:
            return False
        query = {k: v for k, v in params.items() if k in ("service", "scope")}
        query.setdefault("scope", f"repository:{self.ref.repository}:pull")
        url = params["realm"] + "?" + urllib.parse.urlencode(query)
        req = urllib.request.Request(url, headers={"User-Agent": "prov"})
        if self._creds:
            basic = base64.b64encode(self._creds.encode()).decode()
            req.add_unredirected_header("Authorization", f"Basic {basic}")
        try:
            with urllib.request.urlopen(req, timeout=TIMEOUT) as resp:
                doc = json.loads(resp.read(1 << 20))
        except (urllib.error.URLError, OSError, ValueError) as exc2:
            raise ImageError(f"{self.what}: token request failed: {exc2}") from None
        token = doc.get("token") or doc.get("access_token") if isinstance(doc, dict) else None
        if not isinstance(token, str):
            raise ImageError(f"{self.what}: token endpoint gave no token")
        self._auth = f"Bearer {token}"
        return True

    def manifest(self, reference: str) -> tuple[bytes, str, str]:
        """(bytes, media type, digest) of a manifest or index by tag or digest."""
        with self._request(f"{self.base}/manifests/{reference}", accept=ACCEPT) as resp:
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
        with self._request(f"{self.base}/blobs/{digest}") as resp:
            data = resp.read(MAX_DOCUMENT + 1)
        return verified_document(data, digest, what)

    def open(self, digest: str, size: int | None, what: str) -> VerifyingReader:
        check_digest(digest, what)
        return VerifyingReader(self._request(f"{self.base}/blobs/{digest}"), digest, size, what)


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


