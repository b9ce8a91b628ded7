"""The comparison gate: two runs are comparable only if every identity difference is declared.

`prov compare A B --vary KEY_OR_PRESET ...` computes the identity diff of A and B and
sorts every differing key into exactly one bucket:
- *varied*: covered by a `--vary` (a dotted key, a key pattern, or a preset name);
- *ignored*: covered by an always-ignored pattern (built in, or `[tool.prov] ignore`);
- *not loaded*: a package difference no process of either run imported, when both runs
  were probed to the end (loaded.py): listed, not blocking;
- *imported by one run*: a distribution only one run's processes imported, installed in
  that version on both sides and seen unedited (loaded.py): listed, not blocking;
- *refused*: anything else. One refused key refuses the comparison.
Nothing is waived silently: varied and ignored keys are both written into the record.
The libraries both runs loaded are compared beside the manifests (libraries.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from provenance.gate.config import GateConfig
from provenance.gate.libraries import with_library_changes
from provenance.gate.loaded import imported_by_one_run, loaded_packages
from provenance.gate.loaded import not_loaded as is_not_loaded
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
    not_loaded: list[Change] = field(default_factory=list)  # packages no process imported
    one_run: list[Change] = field(default_factory=list)  # imported by one run's processes

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
            "not_loaded": values(self.not_loaded),
            "imported_by_one_run": values(self.one_run),
            "unused_vary": self.unused,
        }


def gate(a: Manifest, b: Manifest, vary: list[str], config: GateConfig | None = None,
         libs: tuple[dict[str, Any], dict[str, Any]] | None = None) -> GateResult:
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
    not_loaded: list[Change] = []
    one_run: list[Change] = []
    loaded = loaded_packages(a, b)
    for change in d.of_kind(LeafKind.IDENTITY):
        key = tuple(split_key(change.key))
        spec = next((s for s, pats in compiled.items()
                     if any(covers_parts(p, key) for p in pats)), None)
        if spec is not None:
            varied[spec].append(change)
        elif any(covers_parts(p, key) for p in ignore):
            ignored.append(change)
        elif is_not_loaded(key, loaded):
            not_loaded.append(change)
        elif imported_by_one_run(change, a, b):
            one_run.append(change)
        else:
            refused.append(change)
    unused = [s for s, changes in varied.items() if not changes]
    return GateResult(d, varied, ignored, refused, unused, patterns,
                      identical=d.identical and not libs_differ, not_loaded=not_loaded,
                      one_run=one_run)

