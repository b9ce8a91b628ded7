"""Packages no process loaded: a difference the in-process probe shows cannot matter.

The probe (provenance/exec/probe) records under `code.modules` every distribution some
process of a run imported, and `probe.complete` when every probed process was seen to its
exit. When both runs are complete, a `python.packages.<name>` difference for a <name>
neither run imported is "not loaded": listed, not blocking. Otherwise it blocks as any
identity difference does (a process killed before exit may have imported anything).
"""

from __future__ import annotations

from provenance.model import Manifest


def loaded_packages(a: Manifest, b: Manifest) -> set[str] | None:
    """What some process of either run imported, or None unless both were fully probed."""
    if a.get("probe.complete") is not True or b.get("probe.complete") is not True:
        return None
    return set(a.get("code.modules") or {}) | set(b.get("code.modules") or {})


def not_loaded(key: tuple[str, ...], loaded: set[str] | None) -> bool:
    return (loaded is not None and len(key) > 2 and key[:2] == ("python", "packages")
            and key[2] not in loaded)
