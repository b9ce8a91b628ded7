"""Locks: image locks (`prov pin`) now; PEP 751 environment locks (pylock.toml) later.

Public API: `image_lock.lock_from_facts(facts) -> str` (TOML), `image_lock.read_lock(text)`,
`image_lock.compare(lock, facts) -> list[Difference]`, and
`verify_command.verify_lock_command(lock, source, as_json) -> int` for `prov verify --lock`.
May import only the manifest model (and, inside the verify command, the containers API).
"""

from lockfiles.image_lock import IMAGE_LOCK_KIND, Difference, LockError

__all__ = ["IMAGE_LOCK_KIND", "Difference", "LockError"]
