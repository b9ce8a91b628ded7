"""Which kind of lock a file is: the one enumeration of lock kinds, and `lock_kind(text)`,
which tells an image lock from a PEP 751 pylock by its content."""

from __future__ import annotations

from enum import StrEnum

from lockfiles.errors import LockError


class LockKind(StrEnum):
    PYLOCK = "pylock"  # PEP 751 pylock.toml
    UV_LOCK = "uv.lock"
    REQUIREMENTS = "requirements"  # a requirements file (pip's format)
    IMAGE = "prov-image-lock"  # `prov pin`'s image lock (its `kind` key says so)
    UNKNOWN = "unknown"


def lock_kind(text: str, origin: str = "lock") -> LockKind:
    """`LockKind.IMAGE`, `LockKind.PYLOCK` or `LockKind.UNKNOWN`."""
    import tomlkit

    try:
        doc = tomlkit.parse(text)
    except Exception as exc:  # tomlkit raises several unrelated types
        raise LockError(f"{origin}: malformed TOML: {exc}") from None
    if doc.get("kind") == LockKind.IMAGE:
        return LockKind.IMAGE
    if "lock-version" in doc and "packages" in doc:
        return LockKind.PYLOCK
    return LockKind.UNKNOWN
