"""Blob redirects (registries send blobs to a CDN): the registry token stays behind."""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from containers.reference import parse_reference
from containers.sources.registry import RegistryClient

BLOB = b"layer bytes " * 100
DIGEST = "sha256:" + hashlib.sha256(BLOB).hexdigest()


def _serve(handler) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_token_not_forwarded_to_the_cdn(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path))
    seen: dict[str, list[str]] = {"cdn": [], "registry": []}

    class Cdn(BaseHTTPRequestHandler):
        def log_message(self, *a) -> None:
            return

        def do_GET(self) -> None:  # noqa: N802
            seen["cdn"].append(self.headers.get("Authorization", ""))
            self.send_response(200)
            self.send_header("Content-Length", str(len(BLOB)))
            self.end_headers()
            self.wfile.write(BLOB)

    cdn = _serve(Cdn)

    class Registry(BaseHTTPRequestHandler):
        def log_message(self, *a) -> None:
            return

        def do_GET(self) -> None:  # noqa: N802
            auth = self.headers.get("Authorization", "")
            seen["registry"].append(auth)
            if self.path.startswith("/token"):
                body = json.dumps({"token": "registry-token-123"}).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            if auth != "Bearer registry-token-123":
                realm = f"http://127.0.0.1:{self.server.server_address[1]}/token"
                self.send_response(401)
                self.send_header("WWW-Authenticate", f'Bearer realm="{realm}",service="t"')
                self.end_headers()
                return
            self.send_response(307)
            self.send_header("Location", f"http://127.0.0.1:{cdn.server_address[1]}/blob")
            self.end_headers()

    reg = _serve(Registry)
    try:
        ref = parse_reference(f"127.0.0.1:{reg.server_address[1]}/a/b:t")
        client = RegistryClient(ref, "test")
        reader = client.open(DIGEST, len(BLOB), "blob")
        data = b"".join(iter(lambda: reader.read(1 << 16), b""))
        assert data == BLOB
        assert "Bearer registry-token-123" in seen["registry"]
        assert seen["cdn"] == [""]
    finally:
        reg.shutdown()
        cdn.shutdown()
