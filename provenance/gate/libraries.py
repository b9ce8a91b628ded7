"""The libraries two runs loaded, compared beside their manifests.

A run records every shared object its processes mapped (`loaded_libraries`). Sampling may
miss a short-lived one in either run, so only libraries seen in both are compared, by
basename: a `libs.<name>` difference means both runs loaded that library from different
files. A library a JIT compiled for the run (the record's `jit`, provenance/exec/jit.py) is
compared by what determined it, `libs.<name>.jit` (kind, cache key, compiler version, source
digest); its bytes, `libs.<name>.sha256`, are context: a fresh cache compiles the same
source into different bytes. Because the set depends on the pair, libraries are not part
of a run's identity digest; they are folded into the gate's diff here, and only here.
"""

from __future__ import annotations

from typing import Any

from provenance.model import LeafKind, Manifest
from provenance.model.diff import ManifestDiff, diff_manifests

SECTION = "libs"


def jit_identity(jit: dict[str, Any]) -> str:
    """`kind:key`, then the compiler and the source digest where the run recorded them."""
    out = f"{jit.get('kind')}:{jit.get('key')}"
    if jit.get("compiler_version"):
        out += f" ({jit.get('compiler')} {jit['compiler_version']})"
    if jit.get("source_sha256"):
        out += f" source {jit['source_sha256']}"
    return out


def _by_name(libs: list[dict[str, Any]]) -> dict[str, Any]:
    """basename -> the joined digests of its files; for a JIT-compiled library, a table of
    its identities (`jit`, identity), its files' digests (`sha256`, context) and the digests
    of any file of that name outside a JIT cache (`files`, identity: never laundered)."""
    plain: dict[str, set[str]] = {}
    jit_bytes: dict[str, set[str]] = {}
    jits: dict[str, set[str]] = {}
    for lib in libs:
        name = str(lib.get("name"))
        digest = str(lib.get("sha256", ""))
        jit = lib.get("jit")
        if isinstance(jit, dict) and jit.get("kind") and jit.get("key"):
            jits.setdefault(name, set()).add(jit_identity(jit))
            if digest.startswith("sha256:"):
                jit_bytes.setdefault(name, set()).add(digest)
        elif digest.startswith("sha256:"):
            plain.setdefault(name, set()).add(digest)
    out: dict[str, Any] = {k: ",".join(sorted(v)) for k, v in plain.items() if k not in jits}
    for name, ids in jits.items():
        out[name] = {"jit": ", ".join(sorted(ids))}
        if name in jit_bytes:
            out[name]["sha256"] = ",".join(sorted(jit_bytes[name]))
        if name in plain:
            out[name]["files"] = ",".join(sorted(plain[name]))
    return out


def common_libraries(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> tuple[dict, dict]:
    """What identifies each library seen in both runs, by basename: its digests, or for a
    JIT-compiled one its cache keys (the digests beside them as context)."""
    la, lb = _by_name(a), _by_name(b)
    both = la.keys() & lb.keys()
    return {k: la[k] for k in both}, {k: lb[k] for k in both}


def with_library_changes(
    d: ManifestDiff, libs: tuple[dict[str, Any], dict[str, Any]] | None
) -> tuple[ManifestDiff, bool]:
    """`d` plus the `libs.<name>` changes of the common libraries; True if any identity
    leaf differs (a JIT library's bytes are context).
    The digests stay the two manifests' own (the ones their records hold)."""
    if not libs or not libs[0]:
        return d, False
    ld = diff_manifests(Manifest({SECTION: dict(libs[0])}), Manifest({SECTION: dict(libs[1])}))
    if not ld.changes:
        return d, False
    differ = any(c.kind is LeafKind.IDENTITY for c in ld.changes)
    merged = ManifestDiff(
        sorted(d.changes + ld.changes, key=lambda c: c.key),
        {**d.section_digests_a, SECTION: ld.section_digests_a[SECTION]},
        {**d.section_digests_b, SECTION: ld.section_digests_b[SECTION]},
        d.digest_a,
        d.digest_b,
    )
    return merged, differ
