"""A run's declared output, read back only if it still matches the digest its record hashed
(a rewritten or stale file is not that run's output)."""

from __future__ import annotations

import hashlib
from pathlib import Path


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return "sha256:" + h.hexdigest()


def declared_output(record: dict, suffix: str) -> Path | None:
    for name, out in (record.get("outputs") or {}).items():
        if name.endswith(suffix) and out.get("type") == "file":
            path = Path(record.get("cwd") or ".") / name
            if path.is_file() and sha256_file(path) == out.get("digest"):
                return path
    return None
