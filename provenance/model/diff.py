"""The difference between two manifests, leaf by leaf, split into identity and context."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from provenance.model import LeafKind, Manifest, classify, split_key


@dataclass(frozen=True)
class Change:
    key: str
    kind: LeafKind  # identity, context or redacted (of whichever side has the key)
    change: str  # "added", "removed" or "changed"
    a: Any
    b: Any

    @property
    def section(self) -> str:
        return split_key(self.key)[0]


@dataclass
class ManifestDiff:
    changes: list[Change] = field(default_factory=list)
    section_digests_a: dict[str, str] = field(default_factory=dict)
    section_digests_b: dict[str, str] = field(default_factory=dict)
    digest_a: str = ""
    digest_b: str = ""

    @property
    def identical(self) -> bool:
        return self.digest_a == self.digest_b

    def of_kind(self, kind: LeafKind) -> list[Change]:
        return [c for c in self.changes if c.kind is kind]

    def changed_sections(self) -> list[str]:
        names = set(self.section_digests_a) | set(self.section_digests_b)
        return sorted(
            n for n in names if self.section_digests_a.get(n) != self.section_digests_b.get(n)
        )

    def to_json(self) -> dict[str, Any]:
        def group(kind: LeafKind) -> dict[str, Any]:
            out: dict[str, Any] = {"added": {}, "removed": {}, "changed": {}}
            for c in self.of_kind(kind):
                if c.change == "added":
                    out["added"][c.key] = c.b
                elif c.change == "removed":
                    out["removed"][c.key] = c.a
                else:
                    out["changed"][c.key] = {"a": c.a, "b": c.b}
            return out

        return {
            "identical": self.identical,
            "digest": {"a": self.digest_a, "b": self.digest_b},
            "changed_sections": self.changed_sections(),
            "identity": group(LeafKind.IDENTITY),
            "context": group(LeafKind.CONTEXT),
            "redacted": group(LeafKind.REDACTED),
        }


def diff_manifests(a: Manifest, b: Manifest) -> ManifestDiff:
    left, right = a.flat(), b.flat()
    changes = []
    for key in sorted(left.keys() | right.keys()):
        va, vb = left.get(key), right.get(key)
        if key in left and key in right and va == vb:
            continue
        kind_a = classify(key, va) if key in left else None
        kind_b = classify(key, vb) if key in right else None
        # A leaf counts as identity if either side is identity: a secret on one side and a
        # plain value on the other still changes the identity digest, so it must show.
        kinds = {kind_a, kind_b} - {None}
        kind = next(
            k for k in (LeafKind.IDENTITY, LeafKind.CONTEXT, LeafKind.REDACTED) if k in kinds
        )
        change = "added" if key not in left else "removed" if key not in right else "changed"
        changes.append(Change(key, kind, change, va, vb))
    return ManifestDiff(
        changes=changes,
        section_digests_a=a.section_digests(),
        section_digests_b=b.section_digests(),
        digest_a=a.digest(),
        digest_b=b.digest(),
    )
