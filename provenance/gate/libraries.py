"""The libraries two runs loaded, compared beside their manifests.

A run records every shared object its processes mapped (`loaded_libraries`). Sampling may
miss a short-lived one in either run, so only libraries seen in both are compared, by
basename: a `libs.<name>` difference means both runs loaded that library from different
files. Because the set depends on the pair, libraries are not part of a run's identity
digest; they are folded into the gate's diff here, and only here.
"""

from __future__ import annotations

from typing import Any

from provenance.model import Manifest
from provenance.model.diff import ManifestDiff, diff_manifests

SECTION = "libs"


def common_libraries(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> tuple[dict, dict]:
    """Digests by basename for libraries seen in both runs."""

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


def with_library_changes(
    d: ManifestDiff, libs: tuple[dict[str, str], dict[str, str]] | None
) -> tuple[ManifestDiff, bool]:
    """`d` plus the `libs.<name>` changes of the common libraries; True if any differ.
    The digests stay the two manifests' own (the ones their records hold)."""
    if not libs or not libs[0]:
        return d, False
    ld = diff_manifests(Manifest({SECTION: dict(libs[0])}), Manifest({SECTION: dict(libs[1])}))
    if not ld.changes:
        return d, False
    merged = ManifestDiff(
        sorted(d.changes + ld.changes, key=lambda c: c.key),
        {**d.section_digests_a, SECTION: ld.section_digests_a[SECTION]},
        {**d.section_digests_b, SECTION: ld.section_digests_b[SECTION]},
        d.digest_a,
        d.digest_b,
    )
    return merged, True
