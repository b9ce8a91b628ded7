"""The comparison gate: two runs are comparable only if every identity difference is declared.

`prov compare A B --vary KEY_OR_PRESET ...` computes the identity diff of A and B and
sorts every differing key into exactly one bucket:
- *varied*: covered by a `--vary` (a dotted key, a key pattern, or a preset name);
- *ignored*: covered by an always-ignored pattern (built in, or `[tool.prov] ignore`);
- *refused*: anything else. One refused key refuses the comparison.
Nothing is waived silently: varied and ignored keys are both written into the record.
The libraries both runs loaded are compared beside the manifests (libraries.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from provenance.gate.config import GateConfig
from provenance.gate.libraries import with_library_changes
from provenance.gate.patterns import covers_parts, parse_pattern
from provenance.model import LeafKind, Manifest, split_key
from provenance.model.diff import Change, ManifestDiff, diff_manifests


@dataclass
class GateResult:
    diff: ManifestDiff  # digests are the two manifests'; changes include libraries
    varied: dict[str, list[Change]]  # --vary spec -> the differences it covers
    ignored: list[Change]
    refused: list[Change]
    unused: list[str]  # --vary specs that covered no difference
    patterns: dict[str, tuple[str, ...]]
    identical: bool = False  # same identity digest and the same common libraries

    @property
    def ok(self) -> bool:
        return not self.refused

    def to_json(self) -> dict[str, Any]:
        def values(changes: list[Change]) -> dict[str, Any]:
            return {c.key: {"change": c.change, "a": c.a, "b": c.b} for c in changes}

        return {
            "comparable": self.ok,
            "identical": self.identical,
            "digest": {"a": self.diff.digest_a, "b": self.diff.digest_b},
            "varied": {
                spec: {"patterns": list(self.patterns[spec]), "keys": values(changes)}
                for spec, changes in self.varied.items()
            },
            "ignored": values(self.ignored),
            "refused": values(self.refused),
            "unused_vary": self.unused,
        }


def gate(a: Manifest, b: Manifest, vary: list[str], config: GateConfig | None = None,
         libs: tuple[dict[str, str], dict[str, str]] | None = None) -> GateResult:
    """Sort every identity difference of `a` and `b` (and of `libs`, the digests of the
    libraries both loaded, `common_libraries`) into varied, ignored or refused."""
    config = config or GateConfig()
    patterns = {spec: config.expand(spec) for spec in vary}
    compiled = {spec: [parse_pattern(p) for p in pats] for spec, pats in patterns.items()}
    ignore = [parse_pattern(p) for p in config.ignore]
    d, libs_differ = with_library_changes(diff_manifests(a, b), libs)
    varied: dict[str, list[Change]] = {spec: [] for spec in vary}
    ignored: list[Change] = []
    refused: list[Change] = []
    for change in d.of_kind(LeafKind.IDENTITY):
        key = tuple(split_key(change.key))
        spec = next((s for s, pats in compiled.items()
                     if any(covers_parts(p, key) for p in pats)), None)
        if spec is not None:
            varied[spec].append(change)
        elif any(covers_parts(p, key) for p in ignore):
            ignored.append(change)
        else:
            refused.append(change)
    unused = [s for s, changes in varied.items() if not changes]
    return GateResult(d, varied, ignored, refused, unused, patterns,
                      identical=d.identical and not libs_differ)


def suggest_presets(refused: list[Change], config: GateConfig) -> dict[str, int]:
    """Presets that would cover refused keys, with how many each covers (most first): what
    a refusal message suggests (`OMP_NUM_THREADS` changed -> `--vary threads`)."""
    counts: dict[str, int] = {}
    for name, pats in config.presets.items():
        compiled = [parse_pattern(p) for p in pats]
        n = sum(any(covers_parts(p, tuple(split_key(c.key))) for p in compiled) for c in refused)
        if n:
            counts[name] = n
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
