"""The comparison gate: two runs are comparable only if every identity difference is declared.

`prov compare A B --vary KEY_OR_PRESET ...` computes the identity diff of A and B and
sorts every differing key into exactly one bucket:
- *varied*: covered by a `--vary` (a dotted key, a key pattern, or a preset name);
- *ignored*: covered by an always-ignored pattern (built in, or `[tool.prov] ignore`);
- *not loaded*: a `python.packages.<name>` difference where every process of both runs
  was probed and none imported <name> (listed, not blocking);
- *refused*: anything else. One refused key refuses the comparison.
Nothing is waived silently: varied and ignored keys are both written into the record.

Patterns use the classification table's syntax on key segments: `*` is one segment, `**`
any number, `PIP_*` a glob within a segment; a pattern also covers every key below it
(`python.packages.numpy` covers its version and fingerprint).

Presets name a concept and list where it can show up. Engine adapters put what the engine
resolved at run time under `runtime.<engine>.<concept>` (e.g.
`runtime.vllm.attention_backend.resolved`), declared parameters under
`run.params.<concept>`, and engines' static facts under `engines.<engine>.<concept>`.
`[tool.prov.presets]` in pyproject.toml adds presets or extends built-in ones.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from provenance.diff import Change, ManifestDiff, diff_manifests
from provenance.model import LeafKind, Manifest, split_key
from provenance.model.errors import ProvError
from provenance.model.keys import matches

PRESETS: dict[str, tuple[str, ...]] = {
    "attention-backend": (
        "runtime.*.attention_backend",
        "runtime.*.models.*.attn_implementation",
        "runtime.torch.flags.sdpa_*",
        "runtime.attention_backend",
        "engines.*.attention_backend",
        "run.params.attention_backend",
        "env.VLLM_ATTENTION_BACKEND",
        "env.VLLM_USE_TRITON_FLASH_ATTN",
        "env.VLLM_FLASH_ATTN_VERSION",
        "env.SGLANG_ATTENTION_BACKEND",
    ),
    "kv-cache-dtype": (
        "runtime.*.kv_cache_dtype",
        "runtime.kv_cache_dtype",
        "engines.*.kv_cache_dtype",
        "run.params.kv_cache_dtype",
        "runtime.*.calculate_kv_scales",
        "runtime.*.kv_scales",
        "env.VLLM_KV_CACHE_DTYPE",
    ),
    "weights": (
        "runtime.*.model",
        "runtime.*.weights",
        "runtime.model",
        "runtime.weights",
        "weights",
        "model",
        "run.params.model",
        "run.params.weights",
        "run.params.checkpoint",
        "runtime.*.revision",
        "runtime.*.tokenizer",
        "runtime.*.models.*.name_or_path",
        "runtime.*.models.*.revision",
        "runtime.*.models.*.files",
        "runtime.*.models.*.chat_template_sha256",
    ),
    "quantization": (
        "runtime.*.quantization",
        "runtime.*.models.*.quantization",
        "engines.*.quantization",
        "run.params.quantization",
    ),
    "threads": (
        "runtime.torch.flags.num_threads",
        "runtime.torch.flags.num_interop_threads",
        "runtime.torch.num_threads",
        "runtime.torch.num_interop_threads",
        "torch.num_threads",
        "torch.num_interop_threads",
        "env.OMP_NUM_THREADS",
        "env.MKL_NUM_THREADS",
        "env.OPENBLAS_NUM_THREADS",
        "run.params.threads",
    ),
    # the command line as typed and the script it ran (provenance/exec/probe)
    "command": (
        "code.command",
        "code.script",
    ),
    "dtype": (
        "runtime.*.dtype",
        "runtime.dtype",
        "engines.*.dtype",
        "run.params.dtype",
        "torch.flags.float32_matmul_precision",
        "runtime.torch.flags.float32_matmul_precision",
        "runtime.torch.flags.default_dtype",
        "runtime.*.models.*.dtype",
    ),
}
# Never worth refusing a comparison over; still listed in the record as ignored.
ALWAYS_IGNORED: tuple[str, ...] = ("env.PROV_*",)


def _parts(pattern: str) -> tuple[str, ...]:
    try:
        return tuple(split_key(pattern))
    except ValueError:
        raise ProvError(f"{pattern!r}: not a valid key pattern") from None


def _covers(pattern: tuple[str, ...], key: tuple[str, ...]) -> bool:
    """True if `pattern` matches `key` or one of its ancestors (a subtree)."""
    return matches(pattern, key, subtree=True)


def covers(pattern: str, key: str) -> bool:
    return _covers(_parts(pattern), tuple(split_key(key)))


@dataclass
class GateConfig:
    presets: dict[str, tuple[str, ...]] = field(default_factory=lambda: dict(PRESETS))
    ignore: tuple[str, ...] = ALWAYS_IGNORED
    source: str | None = None  # the pyproject.toml that extended the built-ins

    def expand(self, spec: str) -> tuple[str, ...]:
        """The key patterns a --vary names: a preset's, or the spec itself as a pattern."""
        if spec in self.presets:
            return self.presets[spec]
        if not spec or spec.startswith(".") or spec.endswith("."):
            raise ProvError(f"--vary {spec!r}: not a preset or dotted key")
        _parts(spec)
        return (spec,)


def suggest_presets(config: GateConfig, changes: list[Change]) -> dict[str, list[str]]:
    """preset -> the refused keys it would cover (each key under its first covering preset)."""
    out: dict[str, list[str]] = {}
    for change in changes:
        key = tuple(split_key(change.key))
        for name, patterns in config.presets.items():
            if any(_covers(_parts(p), key) for p in patterns):
                out.setdefault(name, []).append(change.key)
                break
    return out


def find_pyproject(start: Path | None = None) -> Path | None:
    start = (start or Path.cwd()).absolute()
    for d in (start, *start.parents):
        candidate = d / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def _string_list(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ProvError(f"{where} must be a list of key patterns")
    for v in value:
        _parts(v)
    return tuple(value)


def _read_toml(path: Path) -> dict[str, Any]:
    text = path.read_text(encoding="utf-8")
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomlkit

        return tomlkit.parse(text).unwrap()
    return tomllib.loads(text)


def load_config(start: Path | None = None) -> GateConfig:
    """Built-in presets and ignores, extended by `[tool.prov]` of the nearest pyproject.toml."""
    config = GateConfig()
    path = find_pyproject(start) if not os.environ.get("PROV_NO_PYPROJECT") else None
    if path is None:
        return config
    try:
        data = _read_toml(path)
    except Exception as exc:  # tomllib and tomlkit raise unrelated types
        raise ProvError(f"{path}: cannot read [tool.prov]: {exc}") from None
    section = data.get("tool", {}).get("prov")
    if not isinstance(section, dict):
        return config
    config.source = str(path)
    if "ignore" in section:
        config.ignore = config.ignore + _string_list(section["ignore"], f"{path}: tool.prov.ignore")
    presets = section.get("presets", {})
    if not isinstance(presets, dict):
        raise ProvError(f"{path}: tool.prov.presets must be a table of lists")
    for name, patterns in presets.items():
        extra = _string_list(patterns, f"{path}: tool.prov.presets.{name}")
        config.presets[name] = tuple(dict.fromkeys(config.presets.get(name, ()) + extra))
    return config


def loaded_packages(a: Manifest, b: Manifest) -> set[str] | None:
    """The distributions some process of either run imported (`code.modules`, from the
    in-process probe), or None unless every process of both runs was probed to its exit:
    only then is "no process imported it" known rather than guessed."""
    if a.get("probe.complete") is not True or b.get("probe.complete") is not True:
        return None
    return set(a.get("code.modules") or {}) | set(b.get("code.modules") or {})


def _not_loaded(key: tuple[str, ...], loaded: set[str] | None) -> bool:
    return (loaded is not None and len(key) > 2 and key[:2] == ("python", "packages")
            and key[2] not in loaded)


@dataclass
class GateResult:
    diff: ManifestDiff
    varied: dict[str, list[Change]]  # --vary spec -> the differences it covers
    ignored: list[Change]
    refused: list[Change]
    unused: list[str]  # --vary specs that covered no difference
    patterns: dict[str, tuple[str, ...]]
    not_loaded: list[Change] = field(default_factory=list)  # packages no process imported

    @property
    def ok(self) -> bool:
        return not self.refused

    def to_json(self) -> dict[str, Any]:
        def values(changes: list[Change]) -> dict[str, Any]:
            return {c.key: {"change": c.change, "a": c.a, "b": c.b} for c in changes}

        return {
            "comparable": self.ok,
            "identical": self.diff.identical,
            "digest": {"a": self.diff.digest_a, "b": self.diff.digest_b},
            "varied": {
                spec: {"patterns": list(self.patterns[spec]), "keys": values(changes)}
                for spec, changes in self.varied.items()
            },
            "ignored": values(self.ignored),
            "refused": values(self.refused),
            "not_loaded": values(self.not_loaded),
            "unused_vary": self.unused,
        }


def gate(a: Manifest, b: Manifest, vary: list[str], config: GateConfig | None = None) -> GateResult:
    config = config or GateConfig()
    patterns = {spec: config.expand(spec) for spec in vary}
    compiled = {spec: [_parts(p) for p in pats] for spec, pats in patterns.items()}
    ignore = [_parts(p) for p in config.ignore]
    d = diff_manifests(a, b)
    varied: dict[str, list[Change]] = {spec: [] for spec in vary}
    ignored: list[Change] = []
    refused: list[Change] = []
    not_loaded: list[Change] = []
    loaded = loaded_packages(a, b)
    for change in d.of_kind(LeafKind.IDENTITY):
        key = tuple(split_key(change.key))
        spec = next((s for s, pats in compiled.items() if any(_covers(p, key) for p in pats)), None)
        if spec is not None:
            varied[spec].append(change)
        elif any(_covers(p, key) for p in ignore):
            ignored.append(change)
        elif _not_loaded(key, loaded):
            not_loaded.append(change)
        else:
            refused.append(change)
    unused = [s for s, changes in varied.items() if not changes]
    return GateResult(d, varied, ignored, refused, unused, patterns, not_loaded)


def with_loaded_libraries(manifest: Manifest, libs: dict[str, str]) -> Manifest:
    """The manifest plus a `libs` section: basename -> digest of libraries both runs loaded."""
    if not libs:
        return manifest
    return Manifest({**manifest.facts, "libs": dict(libs)})


def common_libraries(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> tuple[dict, dict]:
    """Digests by basename for libraries seen in both runs (sampling may miss short-lived
    ones in either, so a library seen on one side only is not a difference)."""

    def by_name(libs: list[dict[str, Any]]) -> dict[str, str]:
        out: dict[str, set[str]] = {}
        for lib in libs:
            digest = str(lib.get("sha256", ""))
            if digest.startswith("sha256:"):
                out.setdefault(str(lib.get("name")), set()).add(digest)
        return {k: ",".join(sorted(v)) for k, v in out.items()}

    la, lb = by_name(a), by_name(b)
    both = la.keys() & lb.keys()
    return {k: la[k] for k in both}, {k: lb[k] for k in both}
