"""`prov store gc`: remove what killed writers leave behind; `fsck` reports the same list.

A `prov exec` killed with SIGKILL cannot clean up. What it leaves is harmless to every
reader but takes space, and nothing else removes it:

- temp files under `tmp/` (an object being written): removed when older than the grace
  period and no live process holds them open (every /proc/<pid>/fd is looked at);
- `runs/<id>/` directories (PROV_RUN_DIR): removed when the run is finished, or abandoned
  (its supervisor is dead), or has no record at all and is older than the grace period;
  a running run's directory is never touched;
- index rows that lag the objects (stale or missing rows): refreshed from the objects;
- objects no record refers to (orphaned): removed only with `objects=True`, and only
  when older than the grace period, since a live `prov exec` writes its snapshot object
  a moment before the record that refers to it.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from provenance.store import index as idx
from provenance.store.records import effective_state, index_row
from provenance.store.states import RunState

DEFAULT_GRACE_S = 3600.0


@dataclass
class Leftover:
    path: str
    size: int
    why: str  # what it is, and whether gc may remove it


@dataclass
class Leftovers:
    temp_files: list[Leftover] = field(default_factory=list)
    run_dirs: list[Leftover] = field(default_factory=list)
    kept: list[Leftover] = field(default_factory=list)  # leftovers gc leaves (live, young)

    def to_json(self) -> dict[str, Any]:
        def rows(items: list[Leftover]) -> list[dict[str, Any]]:
            return [{"path": x.path, "size": x.size, "why": x.why} for x in items]

        return {"temp_files": rows(self.temp_files), "run_dirs": rows(self.run_dirs),
                "kept": rows(self.kept)}


def _open_paths(under: Path) -> set[str]:
    """Every path under `under` that some live process holds open (Linux /proc)."""
    held: set[str] = set()
    prefix = str(under) + os.sep
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return held
    for pid in pids:
        fd_dir = f"/proc/{pid}/fd"
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"{fd_dir}/{fd}")
            except OSError:
                continue
            if target.startswith(prefix):
                held.add(target)
    return held


def _tree_size(path: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                continue
    return total


def _age_s(path: Path, now: float) -> float:
    try:
        return now - path.lstat().st_mtime
    except OSError:
        return 0.0


def _temp_leftovers(store, grace_s: float, now: float, out: Leftovers) -> None:
    tmp = store.objects.tmp
    if not tmp.is_dir():
        return
    held = _open_paths(tmp.resolve())
    for f in sorted(tmp.iterdir()):
        size = f.lstat().st_size
        if str(f.resolve()) in held:
            out.kept.append(Leftover(str(f), size, "temp file held open by a live writer"))
        elif _age_s(f, now) < grace_s:
            out.kept.append(Leftover(str(f), size, "temp file younger than the grace period"))
        else:
            out.temp_files.append(Leftover(str(f), size, "temp file of an interrupted write"))


def _run_states(store) -> dict[str, str]:
    rows = store.db.execute("SELECT run_id, state, sup_host, sup_pid, sup_boot, sup_start "
                            "FROM runs").fetchall()
    return {r["run_id"]: effective_state(r["state"], r["sup_host"], r["sup_pid"],
                                         r["sup_boot"], r["sup_start"]) for r in rows}


def _run_dir_leftovers(store, grace_s: float, now: float, out: Leftovers) -> None:
    if not store.runs_dir.is_dir():
        return
    states = _run_states(store)
    for d in sorted(store.runs_dir.iterdir()):
        state = states.get(d.name)
        size = _tree_size(d) if d.is_dir() else d.lstat().st_size
        if state in (RunState.RUNNING, RunState.SERVING):
            out.kept.append(Leftover(str(d), size, f"run directory of a {state} run"))
        elif state is not None:
            out.run_dirs.append(Leftover(str(d), size, f"run directory of a {state} run"))
        elif _age_s(d, now) >= grace_s:
            out.run_dirs.append(Leftover(str(d), size, "run directory with no record"))
        else:
            out.kept.append(Leftover(str(d), size, "run directory younger than the grace "
                                                    "period, with no record yet"))


def leftovers(store, grace_s: float = DEFAULT_GRACE_S) -> Leftovers:
    """What gc would remove (and what it keeps) under tmp/ and runs/."""
    now = time.time()
    out = Leftovers()
    _temp_leftovers(store, grace_s, now, out)
    _run_dir_leftovers(store, grace_s, now, out)
    return out


@dataclass
class GcResult:
    dry_run: bool
    leftovers: Leftovers
    objects: list[Leftover] = field(default_factory=list)
    rows_refreshed: list[str] = field(default_factory=list)

    @property
    def freed(self) -> int:
        items = self.leftovers.temp_files + self.leftovers.run_dirs + self.objects
        return sum(x.size for x in items)

    def to_json(self) -> dict[str, Any]:
        return {"dry_run": self.dry_run, "freed_bytes": self.freed,
                **self.leftovers.to_json(),
                "objects": [{"path": x.path, "size": x.size, "why": x.why}
                            for x in self.objects],
                "rows_refreshed": self.rows_refreshed}


def _orphaned_objects(store, orphaned: list[str], grace_s: float, now: float,
                      kept: list[Leftover]) -> list[Leftover]:
    found = []
    for digest in orphaned:
        path = store.objects.path_for(digest)
        size = path.lstat().st_size if path.exists() else 0
        if _age_s(path, now) < grace_s:
            kept.append(Leftover(str(path), size, "orphaned object younger than the grace "
                                                  "period"))
        else:
            found.append(Leftover(str(path), size, f"object {digest} no record refers to"))
    return found


def _refresh_rows(store, run_ids: list[str]) -> None:
    """Point the index rows of `run_ids` at the newest record of each run (objects win)."""
    from provenance.store.maintenance import scan

    newest = scan(store).runs
    with idx.transaction(store.db) as conn:
        for rid in run_ids:
            if rid in newest:
                digest, rec = newest[rid]
                idx.upsert_run(conn, index_row(rec, digest))


def _remove(path: str) -> None:
    p = Path(path)
    if p.is_dir() and not p.is_symlink():
        shutil.rmtree(p, ignore_errors=True)
    else:
        p.unlink(missing_ok=True)


def gc(store, *, dry_run: bool = False, objects: bool = False,
       grace_s: float = DEFAULT_GRACE_S) -> GcResult:
    from provenance.store.maintenance import fsck

    if not dry_run:  # an abandoned run is finished before its run dir and logs go
        store.list_runs()  # (Store.RECOVER_ABANDONED, where the CLI set it)
    check = fsck(store)
    result = GcResult(dry_run, leftovers(store, grace_s),
                      rows_refreshed=sorted(check.stale_runs + check.unindexed_runs))
    if objects:
        result.objects = _orphaned_objects(store, check.orphaned, grace_s, time.time(),
                                           result.leftovers.kept)
    if dry_run:
        return result
    if result.rows_refreshed:
        _refresh_rows(store, result.rows_refreshed)
    for item in result.leftovers.temp_files + result.leftovers.run_dirs + result.objects:
        _remove(item.path)
    return result
