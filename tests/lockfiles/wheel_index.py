"""A PEP 503 simple index served on 127.0.0.1, and wheels written by code, for lock tests.

The index serves files the way any static index does (`simple/<project>/index.html` with
`#sha256=` links, `files/` beside it); pip, uv and `prov lock` read it as they read PyPI.
`build_wheel` writes a pure-Python wheel with zipfile as the `wheel` package lays one out
(a module, `METADATA`, `WHEEL`, a RECORD with a sha256 row per file), byte for byte the same
on every call, so its hash is stable.
"""

from __future__ import annotations

import base64
import hashlib
import shutil
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from packaging.utils import canonicalize_name, parse_wheel_filename

_EPOCH = (2020, 1, 1, 0, 0, 0)


def build_wheel(out_dir: Path, name: str, version: str, body: str,
                requires: list[str] | None = None) -> Path:
    """`name-version-py3-none-any.whl` in `out_dir`, holding `name.py` with `body` and
    depending on `requires`."""
    dist = f"{name}-{version}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires or [])
    files = {
        f"{name}.py": body.encode(),
        f"{dist}/METADATA": metadata.encode(),
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: prov-tests\nRoot-Is-Purelib: true\n"
                         b"Tag: py3-none-any\n",
    }
    record = "".join(
        f"{path},sha256={_b64(hashlib.sha256(data).digest())},{len(data)}\n"
        for path, data in files.items()
    ) + f"{dist}/RECORD,,\n"
    out_dir.mkdir(parents=True, exist_ok=True)
    wheel = out_dir / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        for path, data in [*files.items(), (f"{dist}/RECORD", record.encode())]:
            zf.writestr(zipfile.ZipInfo(path, _EPOCH), data)
    return wheel


def _b64(digest: bytes) -> str:
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def sha256(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # no request lines on the test's stderr
        pass


class Index:
    """Files under `root/files`, listed per project under `root/simple`."""

    def __init__(self, root: Path, port: int) -> None:
        self.root = root
        self.url = f"http://127.0.0.1:{port}/simple"

    def add(self, wheel: Path) -> None:
        files = self.root / "files"
        files.mkdir(parents=True, exist_ok=True)
        shutil.copy2(wheel, files / wheel.name)
        project = canonicalize_name(parse_wheel_filename(wheel.name)[0])
        links = [
            f'<a href="../../files/{f.name}#sha256={sha256(f)}">{f.name}</a>'
            for f in sorted(files.glob("*.whl"))
            if canonicalize_name(parse_wheel_filename(f.name)[0]) == project
        ]
        page = self.root / "simple" / project
        page.mkdir(parents=True, exist_ok=True)
        (page / "index.html").write_text("<!DOCTYPE html><html><body>\n" + "\n".join(links)
                                         + "\n</body></html>\n")


@contextmanager
def serve(root: Path) -> Iterator[Index]:
    """An index rooted at `root`, served on a free loopback port until the block ends."""
    root.mkdir(parents=True, exist_ok=True)
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Index(root, server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
