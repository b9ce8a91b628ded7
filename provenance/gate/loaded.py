"""Packages no process loaded, or one run's processes only: differences the in-process
probe shows cannot matter.

The probe (provenance/exec/probe) records under `code.modules` every distribution some
process of a run imported, and `probe.complete` when every probed process was seen to its
exit. When both runs are complete, a `python.packages.<name>` difference for a <name>
neither run imported is "not loaded": listed, not blocking. Otherwise it blocks as any
identity difference does (a process killed before exit may have imported anything).

A distribution imported by one run only (`code.modules.<name>.version` on one side: a
helper process that exists on a cold compile cache only imported it) is "imported by one
run": listed, not blocking, when both runs' environments hold that very version
(`python.packages.<name>.version`, the snapshot) and none of its imported files was seen
edited. Which modules a helper happened to import is not an environment difference; a
version or an edit that differs still refuses, under its own key. The same rule holds for
a client's server (`server.code.modules.*` against `server.python.packages.*`).
"""

from __future__ import annotations

from provenance.model import Manifest, join_key, split_key
from provenance.model.diff import Change


def loaded_packages(a: Manifest, b: Manifest) -> set[str] | None:
    """What some process of either run imported, or None unless both were fully probed."""
    if a.get("probe.complete") is not True or b.get("probe.complete") is not True:
        return None
    return set(a.get("code.modules") or {}) | set(b.get("code.modules") or {})


def not_loaded(key: tuple[str, ...], loaded: set[str] | None) -> bool:
    return (loaded is not None and len(key) > 2 and key[:2] == ("python", "packages")
            and key[2] not in loaded)


def imported_by_one_run(change: Change, a: Manifest, b: Manifest) -> bool:
    """`code.modules.<dist>.version` on one side only, that version of <dist> installed on
    both sides, no file of it seen edited; the same under a client's `server.*` (one
    attention backend's server imported `tabulate`, the other's not: seen on the H200)."""
    key = split_key(change.key)
    prefix = key[:-4]
    if prefix not in ([], ["server"]) or len(key) < 4 or change.change == "changed":
        return False
    if key[-4:-2] != ["code", "modules"] or key[-1] != "version":
        return False
    present, version = (a, change.a) if change.change == "removed" else (b, change.b)
    if present.get(join_key([*prefix, "code", "modules", key[-2], "edited"])):
        return False
    installed = join_key([*prefix, "python", "packages", key[-2], "version"])
    return version is not None and a.get(installed) == version == b.get(installed)
