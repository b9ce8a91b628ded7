"""prov's one cache: values kept until a file they were computed from changes.

Every cache of prov is one of two shapes over the same rule:
- an *entry* (`load`, `save`): one value (a collector's answer, a snapshot) kept with the
  stamps of everything it was computed from, in a file named by its key (`entry_path`);
- a *table* (`StampedTable`): many small values, each computed from one file alone (a file's
  sha256, a RECORD's facts), in one file.

The rule:
1. A *stamp* is a path's (st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns), or None when
   the path is absent. ctime cannot be set back, so an edit that restores the mtime
   (`touch -r`, `cp -p`) still changes the stamp.
2. A kept value is used only while every stamp it was kept with is the path's stamp now.
3. A value is not kept when a stamp changed less than `RACY_NS` before its computation began
   (`started_ns`): timestamps are coarse (a kernel tick; 2 s on FAT), so a file written again
   in the same tick as it was read can keep its stamp with other bytes (git's "racily clean"
   entries). Such a value is computed again next time, until the file is old enough.

The caches are valid in themselves: an unreadable, damaged or older-version cache file is a
miss, and an unwritable cache directory only costs speed.

Standard library only and Python 3.8-compatible: the Python collector stamps its answer's
files inside the interpreter it inspects (`python_env.answer_deps`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time

VERSION = 2
RACY_NS = 2_000_000_000


def cache_root() -> str:
    """prov's cache directory: $PROV_CACHE_DIR, else $XDG_CACHE_HOME/prov or ~/.cache/prov."""
    return os.environ.get("PROV_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "prov"
    )


def stamp(path: str) -> list | None:
    """The path's stamp (rule 1), None when it cannot be stat'ed."""
    try:
        return stamp_of(os.stat(path))
    except OSError:
        return None


def stamp_of(st: os.stat_result) -> list:
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def stamps(paths) -> dict:
    """{path: stamp} of each path."""
    return {path: stamp(path) for path in paths if path}


def unchanged(deps: dict) -> bool:
    """Every path still has the stamp recorded in `deps` (rule 2)."""
    return all(stamp(path) == recorded for path, recorded in deps.items())


def settled(recorded: list | None, started_ns: int) -> bool:
    """A stamp old enough to be trusted by a value computed from `started_ns` on (rule 3)."""
    if recorded is None:
        return True
    newest = started_ns - RACY_NS
    return recorded[3] < newest and recorded[4] < newest


def entry_path(name: str, material: object) -> str:
    """The entry file for `material` (JSON-able: what the value depends on besides its
    files' stamps), under a readable `name` prefix."""
    key = hashlib.sha256(json.dumps(material).encode()).hexdigest()[:32]
    return os.path.join(cache_root(), "snapshots", f"{name}-{key}.json")


def _read(path: str) -> dict | None:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return None  # absent or damaged: computed afresh
    if not isinstance(data, dict) or data.get("version") != VERSION:
        return None
    return data


def _write(path: str, data: dict) -> None:
    """Temp file and rename, without fsync: a torn file after a crash is not valid JSON, so
    it is a miss, never a wrong answer."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump({"version": VERSION, **data}, fh)
        os.replace(tmp, path)
    except OSError:  # an unwritable cache only costs speed
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def load(path: str):
    """The value kept at `path` while every stamp it was kept with holds, else None."""
    entry = load_entry(path)
    return entry[0] if entry is not None else None


def load_entry(path: str) -> tuple | None:
    """(value, the stamps it was kept with) of the entry at `path` while they hold."""
    data = _read(path)
    deps = data.get("deps") if data is not None else None
    if not isinstance(deps, dict) or not deps or not unchanged(deps):
        return None
    return data.get("value"), deps


def save(path: str, value: object, deps: dict, started_ns: int) -> bool:
    """Keep `value` with the stamps `deps` of what it was computed from, unless one of them
    changed too recently (rule 3); whether it was kept."""
    if not deps or not all(settled(s, started_ns) for s in deps.values()):
        return False
    _write(path, {"deps": deps, "value": value})
    return True


class StampedTable:
    """Values each computed from one file, keyed by that file's path and kept with its
    stamp; `deps`: what every value depends on besides (the code computing them), whose
    stamps the whole table is kept with. `path` None: nothing is read or written."""

    def __init__(self, path: str | None, deps: list | None = None) -> None:
        self.path = path
        self.deps = stamps(deps or [])
        data = _read(path) if path is not None else None
        rows = data.get("rows") if data is not None and data.get("deps") == self.deps else None
        self.rows: dict = rows if isinstance(rows, dict) else {}
        self.started_ns = time.time_ns()
        self.seen: set = set()  # keys asked for: with `save(prune=True)`, the ones kept
        self.dirty = False

    def get(self, key: str, current: list | None):
        """The value kept for `key` if it was kept with the stamp `current`, else None."""
        self.seen.add(key)
        row = self.rows.get(key)
        if current is not None and isinstance(row, list) and len(row) == 2 \
                and row[0] == current:
            return row[1]
        return None

    def put(self, key: str, recorded: list | None, value: object, started_ns: int) -> None:
        """Keep `value`, computed from `started_ns` on from the file whose stamp is
        `recorded`, unless that stamp is too recent (rule 3)."""
        self.seen.add(key)
        if recorded is None or not settled(recorded, started_ns):
            return
        self.rows[key] = [recorded, value]
        self.dirty = True

    def drop(self, gone) -> None:
        """Forget the rows whose key `gone(key)` says is gone."""
        for key in [k for k in self.rows if gone(k)]:
            del self.rows[key]
            self.dirty = True

    def save(self, prune: bool = False) -> None:
        """Write the table if anything changed; `prune`: drop the rows not asked for."""
        if prune:
            gone = set(self.rows) - self.seen
            for key in gone:
                del self.rows[key]
            self.dirty = self.dirty or bool(gone)
        settled_deps = all(settled(s, self.started_ns) for s in self.deps.values())
        if self.dirty and self.path is not None and settled_deps:
            _write(self.path, {"deps": self.deps, "rows": self.rows})
        self.dirty = False
