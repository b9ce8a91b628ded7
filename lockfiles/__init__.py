"""Locks: PEP 751 `pylock.toml` for Python environments, and image locks (`prov pin`),
written from a manifest and verified against one. Imports only the manifest model; the
command that scans an image and checks it against its lock is the CLI's
(`provenance/cli/verify_image.py`).

Environment locks: `write_pylock(...)` from an environment's manifest (artifacts found in
`LocalWheels` or a `SimpleIndex`, recorded by `Sources`); `read_lock(path) -> Lock` reads a
pylock.toml, uv.lock or requirements file as its tool reads it (`is_environment_lock(path)`
tells them from an image lock); `verify_environment(lock, manifest, exact) -> Report`.

Image locks (`image_lock`): `image_lock.lock_from_facts(facts, files=...) -> str` (TOML;
`files` is `ImageScan.file_checks()`), `image_lock.read_lock(text)`,
`image_lock.lock_packages(facts)` (what a lock pins), `image_lock.compare(lock, facts, files)
-> list[Difference]`; `lock_kind(text)` says which kind a lock text is.
"""

from lockfiles import image_lock
from lockfiles.artifacts import LocalWheels, SimpleIndex
from lockfiles.errors import LockError
from lockfiles.kind import PYLOCK_KIND, lock_kind
from lockfiles.pylock import Sources, write_pylock
from lockfiles.read import Lock, LockedPackage, is_environment_lock, read_lock
from lockfiles.verify_env import verify_environment

__all__ = [
    "PYLOCK_KIND",
    "LocalWheels",
    "Lock",
    "LockError",
    "LockedPackage",
    "SimpleIndex",
    "Sources",
    "image_lock",
    "is_environment_lock",
    "lock_kind",
    "read_lock",
    "verify_environment",
    "write_pylock",
]
