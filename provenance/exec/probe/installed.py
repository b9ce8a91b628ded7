"""Who installed a file: a wheel's RECORD, a dpkg file list, a conda package, the interpreter.

Each index is read once per `collect` and only when asked: the RECORDs of one
site-packages directory (lazily, what they hold kept in prov's stamped cache), all of
/var/lib/dpkg/info/*.list, one prefix's conda-meta.
"""

from __future__ import annotations

import csv
import glob
import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from provenance.collectors import stamped

DPKG_INFO = Path("/var/lib/dpkg/info")
_SITE_DIRS = ("site-packages", "dist-packages")
@dataclass(frozen=True)
class Owned:
    """A file in one distribution's RECORD: the dist and the hash RECORD states."""

    dist: str
    version: str
    relpath: str  # as RECORD writes it, relative to the site directory
    record_hash: str  # "sha256=<urlsafe b64>" or ""

    @property
    def owner(self) -> str:
        return f"wheel:{self.dist}=={self.version}"


def site_root(path: str) -> str | None:
    """The site-packages directory above `path`, if any."""
    parts = path.split(os.sep)
    for i in range(len(parts) - 1, 0, -1):
        if parts[i] in _SITE_DIRS:
            return os.sep.join(parts[: i + 1])
    return None


def _dist_name(metadata: str, fallback: str) -> list[str]:
    """[name, version] from METADATA's headers (the dist-info directory's name without it)."""
    from packaging.utils import canonicalize_name

    name, version = canonicalize_name(fallback[: -len(".dist-info")].split("-")[0]), ""
    try:
        with open(metadata, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                line = line.rstrip("\r\n")
                if line.startswith("Name:"):
                    name = canonicalize_name(line[5:].strip())
                elif line.startswith("Version:"):
                    version = line[8:].strip()
                elif not line:
                    break
    except OSError:
        pass
    return [name, version]


def _record_rows(record: str) -> dict[str, str]:
    """RECORD's files, each as written (a path relative to the site directory) -> its hash."""
    rows: dict[str, str] = {}
    try:
        with open(record, newline="", encoding="utf-8", errors="replace") as fh:
            for row in csv.reader(fh):
                if row and row[0]:
                    rows[os.path.normpath(row[0])] = row[1] if len(row) > 1 else ""
    except OSError:
        pass
    return rows


def _is_shared_object(relpath: str) -> bool:
    name = os.path.basename(relpath)
    return name.endswith(".so") or ".so." in name


def _record_summary(rows: dict[str, str]) -> dict[str, list]:
    """What a lookup needs without the rows: the top-level names RECORD lists (a file is
    looked for only in the RECORDs that list its top-level name) and its shared objects."""
    return {"tops": sorted({rel.split(os.sep, 1)[0] for rel in rows}),
            "sos": [[rel, h] for rel, h in rows.items() if _is_shared_object(rel)]}


def _table_path(root: str) -> str:
    key = hashlib.sha256(root.encode()).hexdigest()[:24]
    return os.path.join(stamped.cache_root(), "snapshots", f"site-index-{key}.json")


class SiteIndex:
    """The RECORDs of one site directory, read lazily: each distribution's name, version,
    top-level names and shared objects are kept in prov's stamped cache by its METADATA's
    and RECORD's stamps (one table per directory); a RECORD's rows are read only when a file
    under one of its top-level names is asked about. Reading all ~150 RECORDs of an
    environment on every `prov exec` was most of the cost of its facts."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.table = stamped.StampedTable(_table_path(root), [__file__])
        self.dists = sorted(str(d) for d in Path(root).glob("*.dist-info"))
        self._names: dict[str, list[str]] = {}
        self._summaries: dict[str, dict[str, list]] = {}
        self._rows: dict[str, dict[str, str]] = {}
        self._tops: dict[str, list[str]] | None = None

    def _kept(self, path: str, compute):
        started_ns, recorded = time.time_ns(), stamped.stamp(path)
        value = self.table.get(path, recorded)
        if value is None:
            value = compute()
            self.table.put(path, recorded, value, started_ns)
        return value

    def name(self, dist: str) -> list[str]:
        if dist not in self._names:
            meta = os.path.join(dist, "METADATA")
            self._names[dist] = self._kept(meta, lambda: _dist_name(meta, os.path.basename(dist)))
        return self._names[dist]

    def summary(self, dist: str) -> dict[str, list]:
        if dist not in self._summaries:
            record = os.path.join(dist, "RECORD")
            self._summaries[dist] = self._kept(
                record, lambda: _record_summary(self.rows(dist)))
        return self._summaries[dist]

    def rows(self, dist: str) -> dict[str, str]:
        if dist not in self._rows:
            self._rows[dist] = _record_rows(os.path.join(dist, "RECORD"))
        return self._rows[dist]

    def _owned(self, dist: str, relpath: str, record_hash: str) -> Owned:
        name, version = self.name(dist)
        return Owned(name, version, relpath, record_hash)

    def owned(self, path: str) -> Owned | None:
        """The distribution whose RECORD lists `path` (the last in dist-info order, where two
        list it: what reading every RECORD in that order into one index gave)."""
        rel = os.path.relpath(os.path.normpath(path), self.root)
        if self._tops is None:
            self._tops = {}
            for dist in self.dists:
                for top in self.summary(dist)["tops"]:
                    self._tops.setdefault(top, []).append(dist)
        found = None
        for dist in self._tops.get(rel.split(os.sep, 1)[0], ()):
            record_hash = self.rows(dist).get(rel)
            if record_hash is not None:
                found = self._owned(dist, rel, record_hash)  # the last RECORD wins, as before
        return found

    def shared_objects(self) -> list[tuple[str, str, Owned]]:
        """(basename, full path, Owned) of every shared object the RECORDs list."""
        return [(os.path.basename(rel), os.path.join(self.root, rel), self._owned(dist, rel, h))
                for dist in self.dists for rel, h in self.summary(dist)["sos"]]

    def save(self) -> None:
        """Write what was read, less the rows of distributions no longer installed."""
        self.table.drop(lambda path: not os.path.exists(path))
        self.table.save()


# One SiteIndex per directory, kept for the process while the directory is unchanged: the
# supervisor collects a server's facts while it serves (exec/live.py) and again at its exit.
# An install or removal adds or removes a *.dist-info entry, which moves the directory's
# mtime.
_SITE_MEMO: dict[str, tuple[int, SiteIndex]] = {}


def _site_index(root: str) -> SiteIndex:
    try:
        stamp = os.stat(root).st_mtime_ns
    except OSError:
        stamp = -1
    held = _SITE_MEMO.get(root)
    if held is not None and held[0] == stamp and stamp != -1:
        return held[1]
    index = SiteIndex(root)
    _SITE_MEMO[root] = (stamp, index)
    return index


def _dpkg_index(lists: list[str]) -> dict[str, str]:
    """Every path the file lists name -> the package whose list names it."""
    index: dict[str, str] = {}
    for lst in lists:
        pkg = os.path.basename(lst)[: -len(".list")]
        try:
            with open(lst, encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    index[line.rstrip("\n")] = pkg
        except OSError:
            continue
    return index


class DpkgOwners:
    """Which package's file list (/var/lib/dpkg/info/*.list) names a path. The answers a run
    asked for are kept in prov's stamped cache while no list and not their directory
    changed; a path not answered before reads every list (~750 files here)."""

    def __init__(self, info: Path = DPKG_INFO) -> None:
        self.info = str(info)
        self.entry = stamped.entry_path("dpkg-owners", [self.info])
        kept = stamped.load_entry(self.entry)
        self.answers: dict[str, str] = kept[0] if kept and isinstance(kept[0], dict) else {}
        self.deps: dict | None = kept[1] if kept else None
        self.started_ns = time.time_ns()
        self._index: dict[str, str] | None = None
        self.dirty = False

    def owner(self, path: str) -> str | None:
        """The package, or None."""
        if path not in self.answers:
            if self._index is None:
                self._read_lists()
            self.answers[path] = self._look_up(path)
            self.dirty = True
        return self.answers[path] or None

    def _read_lists(self) -> None:
        """Read every list; the kept answers are answered again from them, so none outlives
        a list that changed after they were loaded."""
        lists = sorted(glob.glob(os.path.join(glob.escape(self.info), "*.list")))
        self.deps = stamped.stamps([self.info, *lists])  # before the lists are read
        self._index = _dpkg_index(lists)
        self.answers = {path: self._look_up(path) for path in self.answers}

    def _look_up(self, path: str) -> str:
        index = self._index or {}
        return next((index[c] for c in _usrmerge_aliases(path) if c in index), "")

    def save(self) -> None:
        if self.dirty and self.deps and os.path.isdir(self.info):
            stamped.save(self.entry, self.answers, self.deps, self.started_ns)
        self.dirty = False


class Installed:
    def __init__(self) -> None:
        self._sites: dict[str, SiteIndex] = {}
        self._dpkg: DpkgOwners | None = None
        self._conda: dict[str, dict[str, str]] = {}

    def site(self, root: str) -> SiteIndex:
        """The index of one site directory's RECORDs."""
        if root not in self._sites:
            self._sites[root] = _site_index(root)
        return self._sites[root]

    def wheel(self, path: str) -> Owned | None:
        root = site_root(path)
        return self.site(root).owned(path) if root else None

    def save(self) -> None:
        """Keep what was read for the next run (prov's stamped cache)."""
        for site in self._sites.values():
            site.save()
        if self._dpkg is not None:
            self._dpkg.save()

    def dpkg(self, path: str) -> str | None:
        if self._dpkg is None:
            self._dpkg = DpkgOwners()
        return self._dpkg.owner(path)

    def conda(self, path: str) -> str | None:
        for prefix in Path(path).parents:
            meta = prefix / "conda-meta"
            if meta.is_dir():
                return self._conda_index(str(prefix)).get(os.path.relpath(path, prefix))
        return None

    def _conda_index(self, prefix: str) -> dict[str, str]:
        if prefix not in self._conda:
            index: dict[str, str] = {}
            for meta in Path(prefix, "conda-meta").glob("*.json"):
                try:
                    doc = json.loads(meta.read_text())
                    for f in doc.get("files", []):
                        index[str(f)] = f"conda:{doc.get('name')}=={doc.get('version')}"
                except (OSError, ValueError, AttributeError):
                    continue
            self._conda[prefix] = index
        return self._conda[prefix]

    def owner(self, path: str, interpreter_prefixes: tuple[str, ...] = ()) -> str:
        """`wheel:NAME==VER`, `dpkg:PKG`, `conda:NAME==VER`, `interpreter`, or `none`."""
        owned = self.wheel(path)
        if owned is not None:
            return owned.owner
        pkg = self.dpkg(path) or self.dpkg(os.path.realpath(path))
        if pkg:
            return f"dpkg:{pkg}"
        found = self.conda(path)
        if found:
            return found
        for prefix in interpreter_prefixes:
            if prefix and site_root(path) is None and path.startswith(prefix.rstrip("/") + "/"):
                return "interpreter"
        return "none"


def _usrmerge_aliases(path: str) -> list[str]:
    """dpkg lists /lib/... where a merged-/usr system maps /usr/lib/... (and the reverse)."""
    out = [path]
    for a, b in (("/usr/lib/", "/lib/"), ("/lib/", "/usr/lib/"), ("/usr/lib64/", "/lib64/"),
                 ("/lib64/", "/usr/lib64/")):
        if path.startswith(a):
            out.append(b + path[len(a):])
    return out
