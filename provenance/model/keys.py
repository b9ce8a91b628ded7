"""Dotted keys: `python.packages.torch.version`, `os.dpkg."python3.11".version`.

A segment that contains a dot (Debian names such as `python3.11`) or a quote is written
quoted, as TOML writes such keys, so every key splits back into the segments it came from.
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase

_BARE = re.compile(r"^[A-Za-z0-9_\-+:@/]+$")


def quote_segment(segment: str) -> str:
    if _BARE.match(segment):
        return segment
    escaped = segment.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def join_key(parts: list[str] | tuple[str, ...]) -> str:
    return ".".join(quote_segment(p) for p in parts)


def split_key(key: str) -> list[str]:
    """Inverse of join_key. Raises ValueError on an unterminated quote."""
    parts: list[str] = []
    i, n = 0, len(key)
    while i < n:
        if key[i] == '"':
            i += 1
            buf = []
            while i < n and key[i] != '"':
                if key[i] == "\\" and i + 1 < n:
                    i += 1
                buf.append(key[i])
                i += 1
            if i >= n:
                raise ValueError(f"unterminated quote in key {key!r}")
            parts.append("".join(buf))
            i += 1
            if i < n and key[i] != ".":
                raise ValueError(f"expected '.' after quoted segment in key {key!r}")
            i += 1
        else:
            j = key.find(".", i)
            if j == -1:
                j = n
            parts.append(key[i:j])
            i = j + 1
    return parts


def matches(pattern: tuple[str, ...], key: tuple[str, ...], subtree: bool = False) -> bool:
    """The one key-pattern matcher, over split segments.

    `*` is one segment, `**` any number of segments, and a segment with `*` or `?` is a glob
    within that segment (`PIP_*`). With `subtree`, a pattern also matches every key below
    what it names (`python.packages.numpy` matches `python.packages.numpy.version`).
    """
    if not pattern:
        return subtree or not key
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        return any(matches(rest, key[i:], subtree) for i in range(len(key) + 1))
    if not key:
        return False
    glob = ("*" in head or "?" in head) and fnmatchcase(key[0], head)
    if head == "*" or head == key[0] or glob:
        return matches(rest, key[1:], subtree)
    return False
