"""The one error the lock readers raise: a lock that cannot be read (the message is one line)."""

from __future__ import annotations

from provenance.model.errors import ProvError


class LockError(ProvError):
    """A lock that cannot be read: malformed TOML, unknown kind or format."""
