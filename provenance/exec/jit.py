"""Libraries a JIT compiled for this run, identified by what determined them.

A JIT (Triton, torch inductor, FlashInfer) compiles a kernel or launcher into its cache and
the process maps the result. Two runs of one configuration compile the same source with the
same options, yet the bytes can differ (a fresh cache per run; the compiler records the
temporary path it built in), so the bytes are context. What determines the file is the
compiler's cache key (Triton names the directory after a hash of source, options and
compiler), the source, and the compiler's version: that is the identity, `jit.*`.

One table, `KINDS`: each kind says where its caches live (from the run's environment) and how
a path below them turns into an identity. The first kind that claims a path wins.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

# Triton's cache directory: base32 of a sha256, padding stripped (runtime/cache.py _base32).
_TRITON_KEY = re.compile(r"^[A-Z2-7]{52}$")
# Inductor's file names: "c" + 51 base32 characters of a sha256 (codecache.code_hash).
_INDUCTOR_KEY = re.compile(r"^[a-z][a-z2-7]{51}$")
_JSON_LIMIT = 1 << 20  # metadata files are small; a larger one is not Triton's
_SOURCE_LIMIT = 64 << 20


@dataclass(frozen=True)
class JitKind:
    name: str
    package: str  # the distribution whose version is the compiler's
    roots: Callable[[Mapping[str, str]], list[str]]  # cache roots, from the run's env
    identify: Callable[[PurePosixPath, PurePosixPath | None], dict[str, Any] | None]


def _home(env: Mapping[str, str]) -> str:
    return env.get("HOME") or os.path.expanduser("~")


def _triton_roots(env: Mapping[str, str]) -> list[str]:
    base = env.get("TRITON_HOME") or _home(env)
    return [r for r in (env.get("TRITON_CACHE_DIR"), os.path.join(base, ".triton", "cache")) if r]


def _inductor_roots(env: Mapping[str, str]) -> list[str]:
    user = env.get("USER") or env.get("LOGNAME") or ""
    default = os.path.join(tempfile.gettempdir(), f"torchinductor_{user}") if user else None
    return [r for r in (env.get("TORCHINDUCTOR_CACHE_DIR"), default) if r]


def _flashinfer_roots(env: Mapping[str, str]) -> list[str]:
    base = env.get("FLASHINFER_WORKSPACE_BASE") or _home(env)
    return [os.path.join(base, ".cache", "flashinfer")]


def _triton(path: PurePosixPath, root: PurePosixPath | None) -> dict[str, Any] | None:
    """`<cache>/<KEY>/<file>`: KEY is Triton's cache key. Outside a known root the path
    must still look like Triton's (a `triton` segment), so a random 52-letter folder is not
    taken for a cache."""
    key = path.parent.name
    if not _TRITON_KEY.match(key):
        return None
    if root is None and not any("triton" in p.lower() for p in path.parts[:-2]):
        return None
    out: dict[str, Any] = {"key": key}
    meta = _triton_metadata(path.parent)
    if meta:
        out.update(meta)
    return out


def _triton_metadata(folder: PurePosixPath) -> dict[str, Any]:
    """From the kernel's `<name>.json` (not `__grp__*.json`): the compiler's version and
    the kernel's name; a launcher's folder has none (its key hashes its C source)."""
    try:
        names = sorted(n for n in os.listdir(folder)
                       if n.endswith(".json") and not n.startswith("__grp__"))
    except OSError:
        return {}
    for name in names:
        try:
            full = os.path.join(folder, name)
            if os.path.getsize(full) > _JSON_LIMIT:
                continue
            with open(full, "rb") as fh:
                doc = json.loads(fh.read())
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict) and isinstance(doc.get("triton_version"), str):
            meta = {"compiler_version": doc["triton_version"]}
            if isinstance(doc.get("name"), str):
                meta["kernel"] = doc["name"]
            return meta
    return {}


def _inductor(path: PurePosixPath, root: PurePosixPath | None) -> dict[str, Any] | None:
    """Inductor names a compiled file after the hash of its source and build command; any
    other file under its cache is known by its place in the cache."""
    if root is None:
        return None
    stem = path.name.split(".", 1)[0]
    if _INDUCTOR_KEY.match(stem):
        return {"key": stem}
    return {"key": str(path.relative_to(root)), "key_from": "path"}


def _flashinfer(path: PurePosixPath, root: PurePosixPath | None) -> dict[str, Any] | None:
    """`<root>/<arch...>/cached_ops/<module>/<module>.so`: the module name spells out the
    kernel's configuration; its generated sources sit in `<root>/<arch...>/generated/`."""
    if root is None:
        return None
    rel = path.relative_to(root).parts
    if "cached_ops" not in rel:
        return None
    i = rel.index("cached_ops")
    if i + 1 >= len(rel) - 1:
        return None
    module = rel[i + 1]
    out: dict[str, Any] = {"key": module, "arch": "/".join(rel[:i])}
    source = _tree_digest(root.joinpath(*rel[:i], "generated", module))
    if source:
        out["source_sha256"] = source
    return out


def _tree_digest(folder: PurePosixPath) -> str | None:
    """sha256 over the relative names and bytes of the files below `folder`."""
    h = hashlib.sha256()
    total = 0
    found = False
    for dirpath, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(files):
            full = os.path.join(dirpath, name)
            try:
                size = os.path.getsize(full)
                total += size
                if total > _SOURCE_LIMIT:
                    return None
                with open(full, "rb") as fh:
                    data = fh.read()
            except OSError:
                continue
            found = True
            h.update(os.path.relpath(full, folder).encode() + b"\0" + data + b"\0")
    return "sha256:" + h.hexdigest() if found else None


KINDS: tuple[JitKind, ...] = (
    # Triton first: inductor keeps Triton's cache inside its own (<root>/triton/<device>/)
    JitKind("triton", "triton", _triton_roots, _triton),
    JitKind("torch-inductor", "torch", _inductor_roots, _inductor),
    JitKind("flashinfer", "flashinfer-python", _flashinfer_roots, _flashinfer),
)


def _under(path: PurePosixPath, roots: list[str]) -> PurePosixPath | None:
    for r in roots:
        root = PurePosixPath(os.path.abspath(r))
        if path.is_relative_to(root) and path != root:
            return root
    return None


def identify(path: str, env: Mapping[str, str],
             versions: Mapping[str, str] | None = None) -> dict[str, Any] | None:
    """The `jit` fact of a mapped library, or None when no JIT kind claims its path.
    `versions` (distribution -> version, from the run's snapshot) supplies the compiler's
    version where the cache itself does not record it."""
    p = PurePosixPath(path)
    for kind in KINDS:
        found = kind.identify(p, _under(p, kind.roots(env)))
        if found is None:
            continue
        fact = {"kind": kind.name, **found}
        if "compiler_version" not in fact and versions and kind.package in versions:
            fact["compiler_version"] = versions[kind.package]
        if "compiler_version" in fact:
            fact["compiler"] = kind.package
        return fact
    return None


def package_versions(snapshot_text: str) -> dict[str, str]:
    """Distribution -> version of the JIT compilers, from a snapshot document."""
    try:
        packages = json.loads(snapshot_text).get("python", {}).get("packages", {})
    except (ValueError, AttributeError):
        return {}
    if not isinstance(packages, dict):
        return {}
    from packaging.utils import canonicalize_name

    wanted = {kind.package for kind in KINDS}
    out = {}
    for name, entry in packages.items():
        canonical = canonicalize_name(str(name))
        if canonical in wanted and isinstance(entry, dict) \
                and isinstance(entry.get("version"), str):
            out[canonical] = entry["version"]
    return out
