"""Locks: PEP 751 `pylock.toml` for Python environments, and image locks (`prov pin`),
written from a manifest and verified against one. Imports only the manifest model; the
scanner an image check needs is passed in by the CLI (`provenance/cli/verify_image.py`).

Environment locks: `write_pylock(...)` from an environment's manifest (artifacts found in
`LocalWheels` or a `SimpleIndex`, recorded by `Sources`); `read_lock(path) -> Lock` reads a
pylock.toml, uv.lock or requirements file as its tool reads it (`is_environment_lock(path)`
tells them from an image lock); `verify_environment(lock, manifest, exact) -> Report`;
`require_python(manifest, label)` refuses a manifest with no Python packages to lock.

Image locks (`image_lock`): `image_lock.lock_from_facts(facts, files=...) -> str` (TOML;
`files` is `ImageScan.file_checks()`), `image_lock.read_lock(text)`,
`image_lock.lock_packages(facts)` (what a lock pins), `image_lock.compare(lock, facts, files)
-> list[Difference]`; `check_image_lock(lock, source, scan_image) -> ImageCheck` (the
lock read, the image scanned and compared); `lock_kind(text) -> LockKind` says which kind a
lock text is.
"""

from lockfiles import image_lock
from lockfiles.artifacts import LocalWheels, SimpleIndex
from lockfiles.errors import LockError
from lockfiles.kind import LockKind, lock_kind
from lockfiles.pylock import Sources, require_python, write_pylock
from lockfiles.read import Lock, LockedPackage, is_environment_lock, read_lock
from lockfiles.verify_env import verify_environment
from lockfiles.verify_image import ImageCheck, check_image_lock

__all__ = [
    "ImageCheck",
    "LocalWheels",
    "Lock",
    "LockError",
    "LockKind",
    "LockedPackage",
    "SimpleIndex",
    "Sources",
    "check_image_lock",
    "image_lock",
    "is_environment_lock",
    "lock_kind",
    "read_lock",
    "require_python",
    "verify_environment",
    "write_pylock",
]
