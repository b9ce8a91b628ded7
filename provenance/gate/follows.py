"""Keys that follow from a declared difference: a declaration covers what it brings along.

A package is one fact shown under several keys. When a `--vary` spec covers a difference of
`python.packages.<name>` (its version or fingerprint), the spec also covers the keys that
follow from that package, and only while they belong to it on every side that has them:
- `code.modules.<name>.*`: what the probe saw imported of it (version, edited files);
- `runtime.libs.<soname>.*`: a shared object the package's wheel ships (owner
  `wheel:<name>==...` on each side that mapped it), its build id and owner included;
- `libs.<basename>`: a library both runs loaded whose every file is such a shared object
  (the owner from the manifest's `runtime.libs.*.path`; a file the probe did not see is
  not attributed).
What a JIT compiled (`libs.<basename>.jit`) is an output of the code and configuration
that ran, all of it identity elsewhere: it follows from the first spec that covered another
difference of the pair, and from nothing when nothing declared differs (see check.py).
An engine's KV cache asked as `auto` takes the model's dtype: where a spec covers a
difference of `<engine>.dtype` (`runtime.vllm.dtype`, `server.runtime.vllm.dtype`) and both
sides asked `kv_cache_dtype.requested = auto`, the cache's resolved dtype and the dtype its
layers' tensors hold follow (`dtype_follows`); a KV cache asked by name never does.
Each derived pattern is listed in the comparison under its spec with the key it follows
from; nothing is waived silently.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from provenance.gate.patterns import covers_parts
from provenance.model import Manifest, join_key, split_key
from provenance.model.diff import Change

PACKAGES = ("python", "packages")
UNKNOWN = "?"  # a loaded file the probe did not see: owned by nothing we can name

Owners = dict[str, set[str]]  # library basename -> the owners of its files


@dataclass(frozen=True)
class Context:
    """What derivation reads: both manifests, their identity changes, and who owns each
    library both runs loaded (`library_owners`; None when a side is not a run)."""

    a: Manifest
    b: Manifest
    changes: list[Change]
    owners: tuple[Owners, Owners] | None = None

    @cached_property
    def sole_owners(self) -> dict[str, str]:
        """`runtime.libs` name -> its owner, where one owner holds it on every side that
        mapped it (read once: a spec of many packages asks for each)."""
        sides = [self.a.get("runtime.libs") or {}, self.b.get("runtime.libs") or {}]
        out: dict[str, str] = {}
        for lib in sorted(set(sides[0]) | set(sides[1])):
            owners = set().union(*(_owners_of(side[lib]) for side in sides if lib in side))
            if len(owners) == 1:
                out[lib] = next(iter(owners))
        return out


def owner_name(owner: str) -> str:
    """`wheel:NumPy==2.2.6` -> `numpy`; any other owner (`dpkg:...`, `interpreter`) as is."""
    from packaging.utils import canonicalize_name

    if owner.startswith("wheel:"):
        return canonicalize_name(owner[len("wheel:"):].split("==", 1)[0])
    return owner


def _owners_of(entry: Any) -> set[str]:
    raw = entry.get("owner") if isinstance(entry, dict) else None
    values = raw if isinstance(raw, list) else [raw]
    return {owner_name(str(v)) for v in values if v is not None} or {UNKNOWN}


def _paths_of(entry: Any) -> list[str]:
    raw = entry.get("path") if isinstance(entry, dict) else None
    return [str(p) for p in (raw if isinstance(raw, list) else [raw]) if p]


def library_owners(loaded: list[dict[str, Any]], manifest: Manifest) -> Owners:
    """basename -> owners of every file of that name the run loaded, read from the probe's
    `runtime.libs.*` (path -> owner); a file it did not see counts as unknown."""
    by_path: dict[str, set[str]] = {}
    for entry in (manifest.get("runtime.libs") or {}).values():
        for path in _paths_of(entry):
            by_path.setdefault(path, set()).update(_owners_of(entry))
    out: Owners = {}
    for lib in loaded:
        owners = by_path.get(str(lib.get("path")), {UNKNOWN})
        out.setdefault(str(lib.get("name")), set()).update(owners)
    return out


def declared_packages(patterns: list[tuple[str, ...]], changes: list[Change]) -> dict[str, str]:
    """normalised name -> the package key a spec covers a difference of."""
    from packaging.utils import canonicalize_name

    out: dict[str, str] = {}
    for change in changes:
        key = tuple(split_key(change.key))
        if len(key) > 2 and key[:2] == PACKAGES and any(covers_parts(p, key) for p in patterns):
            out.setdefault(canonicalize_name(key[2]), join_key(key[:3]))
    return out


def _modules(name: str, ctx: Context) -> list[str]:
    from packaging.utils import canonicalize_name

    found = set(ctx.a.get("code.modules") or {}) | set(ctx.b.get("code.modules") or {})
    return [join_key(("code", "modules", m)) for m in sorted(found) if canonicalize_name(m) == name]


def _runtime_libs(name: str, ctx: Context) -> list[str]:
    """runtime.libs entries the package's wheel owns on every side that mapped them."""
    return [join_key(("runtime", "libs", lib)) for lib, owner in ctx.sole_owners.items()
            if owner == name]


def _libs(name: str, ctx: Context) -> list[str]:
    """Common libraries whose every file, on both sides, the package's wheel owns."""
    if ctx.owners is None:
        return []
    a, b = ctx.owners
    return [join_key(("libs", lib)) for lib in sorted(a.keys() & b.keys())
            if a[lib] == {name} and b[lib] == {name}]


def package_follows(patterns: list[tuple[str, ...]], ctx: Context) -> dict[str, str]:
    """derived pattern -> the package key it follows from, for every package difference
    the patterns cover."""
    out: dict[str, str] = {}
    for name, source in declared_packages(patterns, ctx.changes).items():
        for derived in _modules(name, ctx) + _runtime_libs(name, ctx) + _libs(name, ctx):
            out.setdefault(derived, source)
    return out


def is_jit(key: tuple[str, ...]) -> bool:
    """`libs.<basename>.jit`: what a JIT compiled for the run (gate/libraries.py)."""
    return len(key) == 3 and key[0] == "libs" and key[2] == "jit"


def one_side_library(key: tuple[str, ...], a: Manifest, b: Manifest) -> bool:
    """A `runtime.libs.<name>` key of a library only one run mapped (both were probed):
    a library seen on one side is no difference, under this key as under `libs.*`."""
    if len(key) < 3 or key[:2] != ("runtime", "libs"):
        return False
    la, lb = a.get("runtime.libs"), b.get("runtime.libs")
    if not isinstance(la, dict) or not isinstance(lb, dict):
        return False
    return (key[2] in la) != (key[2] in lb)


AUTO_KV_FOLLOWERS = ("kv_cache_dtype.resolved", "attention_backend.layers.*.tensor_dtype")


def dtype_follows(patterns: list[tuple[str, ...]], ctx: Context) -> dict[str, str]:
    """derived pattern -> the dtype key it follows from: an `auto` KV cache's dtype follows
    the model's, for every engine dtype difference the patterns cover."""
    out: dict[str, str] = {}
    for change in ctx.changes:
        key = tuple(split_key(change.key))
        if len(key) < 3 or key[-1] != "dtype" or key[-3] not in ("runtime",):
            continue
        if not any(covers_parts(p, key) for p in patterns):
            continue
        engine = key[:-1]  # e.g. ("runtime", "vllm") or ("server", "runtime", "vllm")
        asked = join_key((*engine, "kv_cache_dtype", "requested"))
        if ctx.a.get(asked) == "auto" and ctx.b.get(asked) == "auto":
            for tail in AUTO_KV_FOLLOWERS:  # a pattern: its `*` is one segment, any name
                out.setdefault(join_key(engine) + "." + tail, change.key)
    return out
