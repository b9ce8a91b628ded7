"""Which kind of lock a file is, from its text: an image lock, a PEP 751 pylock, or neither."""

from __future__ import annotations

from lockfiles.errors import LockError
from lockfiles.image_lock import IMAGE_LOCK_KIND

PYLOCK_KIND = "pylock"


def lock_kind(text: str, origin: str = "lock") -> str:
    """`prov-image-lock`, `pylock` or `unknown`."""
    import tomlkit

    try:
        doc = tomlkit.parse(text)
    except Exception as exc:  # tomlkit raises several unrelated types
        raise LockError(f"{origin}: malformed TOML: {exc}") from None
    if doc.get("kind") == IMAGE_LOCK_KIND:
        return IMAGE_LOCK_KIND
    if "lock-version" in doc and "packages" in doc:
        return PYLOCK_KIND
    return "unknown"
