"""A run's declared output, read back only if it still matches the digest its record hashed
(a rewritten or stale file is not that run's output)."""

from __future__ import annotations

from pathlib import Path

from provenance.model.digests import file_sha256


def declared_output(record: dict, suffix: str) -> Path | None:
    for name, out in (record.get("outputs") or {}).items():
        if name.endswith(suffix) and out.get("type") == "file":
            path = Path(record.get("cwd") or ".") / name
            if path.is_file() and file_sha256(path) == out.get("digest"):
                return path
    return None
