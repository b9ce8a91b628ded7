"""The one registry client (OCI distribution API over stdlib HTTP), for pull and push.

`prov snapshot/pin --image registry:...` pulls through it (containers/sources/registry.py)
and `prov publish --to registry:` pushes through it (provenance/publish/registry.py, via
`containers.Registry`). It owns what both need:
  1. the base URL: http for loopback hosts only, https otherwise (docker.io is
     registry-1.docker.io);
  2. authentication: on a 401, Basic with the Docker config's credentials, or a bearer token
     fetched from the challenge's realm (anonymous, or with those credentials). Credentials
     are sent only to the registry and its realm, as unredirected headers: a blob redirect
     to a CDN never carries them. They are never recorded or put into a message;
  3. errors: one line each (`RegistryError`, an `ImageError`), with the HTTP status kept for
     callers that give a 404 its own meaning.
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
from typing import Any

from containers.errors import ImageError

TIMEOUT = 60
_LOOPBACK = ("127.0.0.1", "localhost", "[::1]")


class RegistryError(ImageError):
    """A registry refused or failed a request; `status` is the HTTP status (None: no answer)."""

    def __init__(self, message: str, status: int | None = None, body: bytes = b"") -> None:
        super().__init__(message)
        self.status = status
        self.body = body


def docker_config_auth(host: str) -> str | None:
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


def registry_root(host: str) -> str:
    """`http(s)://HOST` as the client talks to it."""
    host = "registry-1.docker.io" if host == "docker.io" else host
    loopback = host.split(":")[0] in _LOOPBACK or host.startswith("[::1]")
    return f"{'http' if loopback else 'https'}://{host}"


class Registry:
    """One repository of one registry. `what` names it in messages; `push` asks for a token
    that may push."""

    def __init__(self, host: str, repository: str, what: str, push: bool = False) -> None:
        self.host, self.repository, self.what = host, repository, what
        self.root = registry_root(host)
        self.base = f"{self.root}/v2/{repository}"
        self._actions = "pull,push" if push else "pull"
        self._auth: str | None = None  # the Authorization header, once negotiated
        self._creds = docker_config_auth(host)

    def url(self, path: str) -> str:
        """An absolute URL for a repository path (`/blobs/...`) or a `Location` header."""
        if path.startswith(("http://", "https://")):
            return path
        return self.root + path if path.startswith("/v2/") else self.base + path

    def request(self, path: str, method: str = "GET", data: bytes | None = None,
                headers: dict[str, str] | None = None, accept: str | None = None) -> Any:
        """The open response; a refused request raises RegistryError (one line)."""
        url = self.url(path)
        base_headers = {"User-Agent": "prov", **(headers or {})}
        if accept:
            base_headers["Accept"] = accept
        for attempt in range(2):
            req = urllib.request.Request(url, data=data, headers=dict(base_headers),
                                         method=method)
            if self._auth:
                # unredirected: a blob redirect to a CDN must not carry the registry token
                req.add_unredirected_header("Authorization", self._auth)
            try:
                return urllib.request.urlopen(req, timeout=TIMEOUT)
            except urllib.error.HTTPError as exc:
                if exc.code == 401 and attempt == 0 and self._negotiate(exc):
                    continue
                raise RegistryError(self._http_message(exc.code, url), exc.code,
                                    _body(exc)) from None
            except (urllib.error.URLError, OSError) as exc:
                reason = getattr(exc, "reason", exc)
                raise RegistryError(f"{self.what}: cannot reach {self.root}: {reason}") from None
        raise RegistryError(f"{self.what}: unauthorized", 401)

    def _http_message(self, code: int, url: str) -> str:
        if code == 404:
            return f"{self.what}: not found in the registry ({url.split('/v2/')[-1]})"
        if code in (401, 403):
            hint = "" if self._creds else " (no credentials for it in the Docker config)"
            return f"{self.what}: access denied by the registry{hint}"
        return f"{self.what}: registry answered HTTP {code}"

    def _negotiate(self, exc: urllib.error.HTTPError) -> bool:
        """Set the Authorization header the 401's challenge asks for; False if none fits."""
        scheme, params = _challenge(exc.headers.get("WWW-Authenticate", ""))
        if scheme == "basic":
            if not self._creds:
                return False
            self._auth = "Basic " + base64.b64encode(self._creds.encode()).decode()
            return True
        if scheme != "bearer" or "realm" not in params:
            return False
        self._auth = f"Bearer {self._token(params)}"
        return True

    def _token(self, params: dict[str, str]) -> str:
        query = {k: v for k, v in params.items() if k in ("service", "scope")}
        query.setdefault("scope", f"repository:{self.repository}:{self._actions}")
        url = params["realm"] + "?" + urllib.parse.urlencode(query)
        req = urllib.request.Request(url, headers={"User-Agent": "prov"})
        if self._creds:
            basic = base64.b64encode(self._creds.encode()).decode()
            req.add_unredirected_header("Authorization", f"Basic {basic}")
        try:
            with urllib.request.urlopen(req, timeout=TIMEOUT) as resp:
                doc = json.loads(resp.read(1 << 20))
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise RegistryError(f"{self.what}: token request failed: {exc}") from None
        token = doc.get("token") or doc.get("access_token") if isinstance(doc, dict) else None
        if not isinstance(token, str):
            raise RegistryError(f"{self.what}: token endpoint gave no token")
        return token


def _body(exc: urllib.error.HTTPError) -> bytes:
    try:
        return exc.read()[:300]
    except OSError:
        return b""
