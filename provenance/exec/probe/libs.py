"""The libraries each probed process had mapped at exit: build-id, owner, shadowing.

`runtime.libs.<soname>` (the file's DT_SONAME, else its basename) holds the ELF build-id
and the owner (identity) and the path (context: two copies of one environment live in
different directories). A library that
nothing installed owns, or that is mapped from another path than the copy a wheel of the
same process ships under that soname (LD_LIBRARY_PATH is searched before a wheel's RUNPATH),
is flagged: `runtime.libs.<basename>.shadows` names the wheel's copy, and
`probe.libraries.shadowing` / `.unowned` say it in words, with both paths and owners.
Kernels compiled during the run (inductor, triton) are counted, not listed (`jit_artifact`).
"""

from __future__ import annotations

import os
from typing import Any

from provenance.exec.jit import identify
from provenance.exec.probe.elf import read_elf
from provenance.exec.probe.installed import Installed, Owned, SiteIndex, site_root
from provenance.exec.probe.processes import Process


def jit_artifact(path: str) -> bool:
    """A kernel a compiler built during the run (torch inductor, triton, vLLM's compile
    cache): an output of inputs that are identity already, named and rebuilt per config."""
    parts = path.split(os.sep)
    return any(p.startswith("torchinductor") or p in (".triton", "torch_compile_cache")
               for p in parts) or f"{os.sep}triton{os.sep}cache{os.sep}" in path


# root -> (the site index, its shared objects): reused while installed.py hands out that
# same index (it keeps one while its directory is unchanged)
_SHARED_MEMO: dict[str, tuple[SiteIndex, list[tuple[str, str, Owned]]]] = {}


def _shared_objects(installed: Installed, root: str) -> list[tuple[str, str, Owned]]:
    index = installed.site(root)
    held = _SHARED_MEMO.get(root)
    if held is not None and held[0] is index:
        return held[1]
    found = index.shared_objects()
    _SHARED_MEMO[root] = (index, found)
    return found


def _shipped_copies(installed: Installed, roots: set[str]) -> dict[str, list[tuple[str, Owned]]]:
    """basename -> (path, Owned) of every shared object the wheels in `roots` ship."""
    out: dict[str, list[tuple[str, Owned]]] = {}
    for root in sorted(roots):
        for name, path, owned in _shared_objects(installed, root):
            out.setdefault(name, []).append((path, owned))
    return out


def _roots(p: Process) -> set[str]:
    roots = {site_root(f) for f in p.modules.values()}
    roots |= {site_root(f) for f in p.maps or ()}
    return {r for r in roots if r}


def _one(values: set[str]) -> str | list[str]:
    return next(iter(values)) if len(values) == 1 else sorted(values)


def _jit_claimed(path: str) -> bool:
    """A file in a JIT cache that provenance/exec/jit.py knows (TRITON_CACHE_DIR included):
    the supervisor's library sampler compares it by its cache key, not by its bytes."""
    try:
        return identify(path, os.environ) is not None
    except (OSError, ValueError):
        return False


def library_facts(processes: list[Process], installed: Installed) -> tuple[dict, dict]:
    """(runtime.libs facts, probe.libraries notes) over every process that read its maps."""
    seen: dict[str, dict[str, set[str]]] = {}
    unowned: set[str] = set()
    shadowing: set[str] = set()
    jit: set[str] = set()
    for p in processes:
        if p.maps is None:
            continue
        shipped = _shipped_copies(installed, _roots(p))
        prefixes = (p.base_prefix, p.prefix)
        for path in p.maps:
            if jit_artifact(path) or _jit_claimed(path):
                jit.add(path)
                continue
            bid, soname = read_elf(path)
            name = soname or os.path.basename(path)  # what the loader resolved it as
            owner = installed.owner(path, prefixes)
            entry = seen.setdefault(name, {"build_id": set(), "owner": set(), "path": set(),
                                           "shadows": set()})
            entry["build_id"].add(bid or "none")
            entry["owner"].add(owner)
            entry["path"].add(path)
            if owner == "none":
                unowned.add(path)
            copies = shipped.get(name, [])
            real = os.path.realpath(path)
            if any(os.path.realpath(copy) == real for copy, _ in copies):
                continue  # the wheel's own copy (or one of them) is the one mapped
            for copy, owned in copies:
                entry["shadows"].add(f"{owned.owner}:{owned.relpath}")
                shadowing.add(f"{path} ({owner}) is mapped where {copy} ({owned.owner}) "
                              "ships the same name")
    facts: dict[str, Any] = {}
    for name, entry in sorted(seen.items()):
        facts[name] = {k: _one(v) for k, v in entry.items() if v}
    notes: dict[str, Any] = {"mapped": len(seen)}
    if unowned:
        notes["unowned"] = sorted(unowned)
    if shadowing:
        notes["shadowing"] = sorted(shadowing)
    if jit:
        notes["jit_compiled"] = len(jit)
    return facts, notes
