"""Leaves that say a fact is not known, and the one parser that recognises them.

Collectors never crash a snapshot: a fact they cannot read is written as a marker and a
reason, `unavailable: <reason>` (also `unknown`, `none`, `error` from older collectors and
tools). The text in the manifest stays what it always was; code asks `not_known(value)`
instead of sniffing the prefix. The stdlib-only readers that run inside other interpreters
(`collectors/standalone/`, the in-process probe) write the same text by hand.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Marker(StrEnum):
    UNAVAILABLE = "unavailable"  # the collector could not read it; the reason follows
    UNKNOWN = "unknown"
    NONE = "none"
    ERROR = "error"


@dataclass(frozen=True)
class NotKnown:
    """A parsed marker leaf: `unavailable: no os-release file`."""

    marker: Marker
    reason: str = ""

    def __str__(self) -> str:
        return f"{self.marker}: {self.reason}" if self.reason else str(self.marker)


def unavailable(reason: str) -> str:
    """The leaf a collector writes for a fact it could not read."""
    return str(NotKnown(Marker.UNAVAILABLE, reason))


def not_known(value: Any) -> NotKnown | None:
    """The marker `value` holds (`unavailable: ...`, `none`, `error: ...`), or None when it
    is a fact. Only the text before the first colon is the marker, in any case."""
    if not isinstance(value, str):
        return None
    head, _, reason = value.partition(":")
    try:
        marker = Marker(head.strip().lower())
    except ValueError:
        return None
    return NotKnown(marker, reason.strip())


def known(value: Any) -> bool:
    """A fact: not missing, not empty, not a marker."""
    return value is not None and value != "" and not_known(value) is None


def reason_of(value: Any) -> str:
    """Why a fact is not known (the marker's reason), or the value itself as text."""
    parsed = not_known(value)
    return (parsed.reason or str(parsed)) if parsed else str(value)
