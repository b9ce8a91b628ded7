"""The comparison gate: two runs are comparable only if every identity difference is declared.

`prov compare A B --vary KEY_OR_PRESET ...` computes the identity diff of A and B and
sorts every differing key into exactly one bucket:
- *varied*: covered by a `--vary` (a dotted key, a key pattern or a preset name), or
  following from what it covers (follows.py: a package's modules and libraries; what a JIT
  compiled), listed under the spec with the key it follows from;
- *ignored*: covered by an always-ignored pattern (built in, or `[tool.prov] ignore`);
- *not loaded*: a package difference no process of either run imported, when both runs
  were probed to the end (loaded.py): listed, not blocking;
- *one side only*: a `runtime.libs.<name>` key of a library only one run mapped: a library
  seen on one side is no difference (as for `libs.*`, libraries.py): listed, not blocking;
- *imported by one run*: a distribution only one run's processes imported, installed in
  that version on both sides and seen unedited (loaded.py): listed, not blocking;
- *read by one run*: a variable only one run read, set to the same value in both runs'
  environments (env_read.py): listed, not blocking;
- *refused*: anything else. One refused key refuses the comparison.
Nothing is waived silently: every bucket but refused is written into the record.
The libraries both runs loaded are compared beside the manifests (libraries.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from provenance.gate.config import GateConfig
from provenance.gate.declared import Declared
from provenance.gate.env_read import read_by_one_run
from provenance.gate.follows import Context, Owners, is_jit, one_side_library
from provenance.gate.libraries import with_library_changes
from provenance.gate.loaded import imported_by_one_run, loaded_packages
from provenance.gate.loaded import not_loaded as is_not_loaded
from provenance.gate.patterns import covers_parts, parse_pattern
from provenance.model import LeafKind, Manifest, split_key
from provenance.model.diff import Change, ManifestDiff, diff_manifests


def _key(change: Change) -> str:
    return change.key


def _values(changes: list[Change]) -> dict[str, Any]:
    return {c.key: {"change": c.change, "a": c.a, "b": c.b} for c in changes}


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
    one_side: list[Change] = field(default_factory=list)  # libraries one run mapped
    # --vary spec -> derived pattern -> the key it follows from (those that covered a key)
    follows: dict[str, dict[str, str]] = field(default_factory=dict)
    context: Context | None = field(default=None, repr=False, compare=False)
    one_run: list[Change] = field(default_factory=list)  # imported by one run's processes
    env_one_run: list[Change] = field(default_factory=list)  # read by one run, set alike

    @property
    def ok(self) -> bool:
        return not self.refused

    def to_json(self) -> dict[str, Any]:
        return {
            "comparable": self.ok,
            "identical": self.identical,
            "digest": {"a": self.diff.digest_a, "b": self.diff.digest_b},
            "varied": {
                spec: {"patterns": list(self.patterns[spec]), "keys": _values(changes),
                       "follows": dict(self.follows.get(spec, {}))}
                for spec, changes in self.varied.items()
            },
            "ignored": _values(self.ignored),
            "refused": _values(self.refused),
            "not_loaded": _values(self.not_loaded),
            "one_side": _values(self.one_side),
            "imported_by_one_run": _values(self.one_run),
            "read_by_one_run": _values(self.env_one_run),
            "unused_vary": self.unused,
        }


@dataclass
class _Sorter:
    """Puts each identity change in its bucket (the order of the checks is the rule)."""

    specs: list[Declared]
    ignore: list[tuple[str, ...]]
    loaded: set[str] | None
    ctx: Context
    varied: dict[str, list[Change]] = field(default_factory=dict)
    follows: dict[str, dict[str, str]] = field(default_factory=dict)
    ignored: list[Change] = field(default_factory=list)
    not_loaded: list[Change] = field(default_factory=list)
    one_side: list[Change] = field(default_factory=list)
    one_run: list[Change] = field(default_factory=list)
    env_one_run: list[Change] = field(default_factory=list)
    refused: list[Change] = field(default_factory=list)

    def _vary(self, spec: str, change: Change, via: tuple[str, str] | None = None) -> None:
        self.varied.setdefault(spec, []).append(change)
        if via is not None:
            self.follows.setdefault(spec, {})[via[0]] = via[1]

    def place(self, change: Change, key: tuple[str, ...]) -> None:
        for d in self.specs:
            if d.direct(key):
                return self._vary(d.spec, change)
        for d in self.specs:
            via = d.derived(key)
            if via is not None:
                return self._vary(d.spec, change, via)
        self._rest(change, key)

    def place_jit(self, change: Change, key: tuple[str, ...]) -> None:
        """What a JIT compiled follows from the first spec that covers another difference."""
        for d in self.specs:
            cause = next((c.key for c in self.varied.get(d.spec, [])
                          if not is_jit(tuple(split_key(c.key)))), None)
            if cause is not None:
                return self._vary(d.spec, change, (change.key, cause))
        self._rest(change, key)

    def _rest(self, change: Change, key: tuple[str, ...]) -> None:
        if any(covers_parts(p, key) for p in self.ignore):
            self.ignored.append(change)
        elif is_not_loaded(key, self.loaded):
            self.not_loaded.append(change)
        elif one_side_library(key, self.ctx.a, self.ctx.b):
            self.one_side.append(change)
        elif imported_by_one_run(change, self.ctx.a, self.ctx.b):
            self.one_run.append(change)
        elif read_by_one_run(change, self.ctx.a, self.ctx.b):
            self.env_one_run.append(change)
        else:
            self.refused.append(change)


def gate(a: Manifest, b: Manifest, vary: list[str], config: GateConfig | None = None,
         libs: tuple[dict[str, Any], dict[str, Any]] | None = None,
         owners: tuple[Owners, Owners] | None = None) -> GateResult:
    """Sort every identity difference of `a` and `b` (and of `libs`, the digests of the
    libraries both loaded, `common_libraries`; `owners`, who owns them, `library_owners`)
    into varied, ignored, not loaded, one side only or refused."""
    config = config or GateConfig()
    patterns = {spec: config.expand(spec) for spec in vary}
    d, libs_differ = with_library_changes(diff_manifests(a, b), libs)
    changes = d.of_kind(LeafKind.IDENTITY)
    ctx = Context(a, b, changes, owners)
    specs = [Declared.of(spec, pats, ctx) for spec, pats in patterns.items()]
    s = _Sorter(specs, [parse_pattern(p) for p in config.ignore], loaded_packages(a, b), ctx)
    later = []
    for change in changes:
        key = tuple(split_key(change.key))
        if is_jit(key) and not any(sp.direct(key) for sp in specs):
            later.append((change, key))  # after its possible causes are placed
        else:
            s.place(change, key)
    for change, key in later:
        s.place_jit(change, key)
    varied = {spec: sorted(s.varied.get(spec, []), key=_key) for spec in vary}
    unused = [spec for spec, found in varied.items() if not found]
    s.refused.sort(key=_key)  # JIT keys were placed last
    s.ignored.sort(key=_key)
    return GateResult(d, varied, s.ignored, s.refused, unused, patterns,
                      identical=d.identical and not libs_differ, not_loaded=s.not_loaded,
                      one_side=s.one_side, one_run=s.one_run, follows=s.follows, context=ctx,
                      env_one_run=s.env_one_run)
