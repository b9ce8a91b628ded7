"""`prov exec --server URL`: the identity a server run serves at URL/prov/v1/identity.

The answer is untrusted JSON from the network: checked at the edge; an unreachable or
malformed server is a ProvError (one line), never a traceback.
"""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from provenance.model.errors import ProvError

IDENTITY_PATH = "/prov/v1/identity"  # _prov_probe/asgi.py's
IDENTITY_FORMAT = "prov-identity/1"
MAX_BYTES = 64 * 1024 * 1024
TIMEOUT_S = 15


class ServerUnreachable(ProvError):
    """--server URL gave no prov identity."""


def identity_url(url: str) -> str:
    try:
        parts = urllib.parse.urlsplit(url if "://" in url else "http://" + url)
    except ValueError:  # an unbalanced [ of an IPv6 host
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.netloc \
            or any(c.isspace() or not c.isprintable() for c in url):
        raise ServerUnreachable(f"--server {url!r}: not an http(s) URL")
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, IDENTITY_PATH, "", ""))


def fetch_identity(url: str, timeout: float = TIMEOUT_S) -> dict[str, Any]:
    """The server's identity document: format, server_run_id, store, manifest_digest, state
    and its manifest document as its store holds it now (live while it serves)."""
    where = identity_url(url)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(where, timeout=timeout) as r:
            data = r.read(MAX_BYTES)
    except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as exc:
        raise ServerUnreachable(f"--server {url}: no prov identity at {where}: "
                                f"{getattr(exc, 'reason', exc)}") from None
    try:
        doc = json.loads(data)
    except ValueError:
        raise ServerUnreachable(f"--server {url}: {where} did not answer JSON") from None
    if not isinstance(doc, dict) or doc.get("format") != IDENTITY_FORMAT \
            or not isinstance(doc.get("server_run_id"), str):
        raise ServerUnreachable(f"--server {url}: {where} is not a prov server identity "
                                "(is the server run under prov exec?)")
    if not isinstance(doc.get("manifest"), dict):
        doc.pop("manifest", None)
    doc["url"] = url
    return doc
