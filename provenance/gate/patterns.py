"""Key patterns as the gate reads them: a pattern also covers every key below it.

Patterns use the classification table's syntax on key segments: `*` is one segment, `**`
any number, `PIP_*` a glob within a segment (`provenance.model.keys.matches`, the one
matcher); `python.packages.numpy` covers its version and fingerprint, and a client's
`server.python.packages.numpy` too (the server it talked to).
"""

from __future__ import annotations

from provenance.model import split_key
from provenance.model.errors import ProvError
from provenance.model.keys import matches


def parse_pattern(pattern: str) -> tuple[str, ...]:
    try:
        return tuple(split_key(pattern))
    except ValueError:
        raise ProvError(f"{pattern!r}: not a valid key pattern") from None


SERVER = "server"  # a client's copy of its server run's identity (exec/serving)


def covers_parts(pattern: tuple[str, ...], key: tuple[str, ...]) -> bool:
    """True if `pattern` matches `key` or one of its ancestors (a subtree). A client's
    `server.K` is the server's key K: every pattern covers it as it covers K (one rule, so
    each preset and ignore covers the server behind a client as it covers the run's own)."""
    if matches(pattern, key, subtree=True):
        return True
    return (len(key) > 1 and key[0] == SERVER and pattern[:1] != (SERVER,)
            and matches(pattern, key[1:], subtree=True))


def covers(pattern: str, key: str) -> bool:
    return covers_parts(parse_pattern(pattern), tuple(split_key(key)))
