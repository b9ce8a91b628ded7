"""One declared variable as the gate matches it: its patterns, and the keys that follow
from what it covers (follows.py). The gate and the refusal's suggestions both use it, so a
suggested preset is one that would really cover the keys it is suggested for."""

from __future__ import annotations

from dataclasses import dataclass

from provenance.gate.follows import Context, dtype_follows, package_follows
from provenance.gate.patterns import covers_parts, parse_pattern


@dataclass(frozen=True)
class Declared:
    spec: str
    patterns: tuple[tuple[str, ...], ...]
    follows: dict[tuple[str, ...], tuple[str, str]]  # derived parts -> (pattern, source key)

    @classmethod
    def of(cls, spec: str, patterns: tuple[str, ...], ctx: Context | None) -> Declared:
        parsed = tuple(parse_pattern(p) for p in patterns)
        derived = {**package_follows(list(parsed), ctx),
                   **dtype_follows(list(parsed), ctx)} if ctx is not None else {}
        return cls(spec, parsed, {parse_pattern(k): (k, src) for k, src in derived.items()})

    def direct(self, key: tuple[str, ...]) -> bool:
        return any(covers_parts(p, key) for p in self.patterns)

    def derived(self, key: tuple[str, ...]) -> tuple[str, str] | None:
        """(derived pattern, the key it follows from) covering `key`, if any."""
        return next((v for p, v in self.follows.items() if covers_parts(p, key)), None)

    def covers(self, key: tuple[str, ...]) -> bool:
        return self.direct(key) or self.derived(key) is not None
