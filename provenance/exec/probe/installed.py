"""Who installed a file: a wheel's RECORD, a dpkg file list, a conda package, the interpreter.

Each index is read once per `collect` and only when asked: the RECORDs of one
site-packages directory (kept for the process while the directory is unchanged), all of
/var/lib/dpkg/info/*.list, one prefix's conda-meta.
"""

from __future__ import annotations

import csv
import json
import os
from dataclasses import dataclass
from pathlib import Path

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


def _dist_name(dist_info: Path) -> tuple[str, str]:
    from packaging.utils import canonicalize_name

    name, version = canonicalize_name(dist_info.name[: -len(".dist-info")].split("-")[0]), ""
    try:
        for line in (dist_info / "METADATA").read_text(errors="replace").splitlines():
            if line.startswith("Name:"):
                name = canonicalize_name(line[5:].strip())
            elif line.startswith("Version:"):
                version = line[8:].strip()
            elif not line:
                break
    except OSError:
        pass
    return name, version


def _read_record(root: str, dist_info: Path, out: dict[str, Owned]) -> None:
    name, version = _dist_name(dist_info)
    try:
        with open(dist_info / "RECORD", newline="", encoding="utf-8", errors="replace") as fh:
            for row in csv.reader(fh):
                if not row or not row[0]:
                    continue
                full = os.path.normpath(os.path.join(root, row[0]))
                out[full] = Owned(name, version, row[0], row[1] if len(row) > 1 else "")
    except OSError:
        pass


# One site directory's index, kept for the process while the directory is unchanged: the
# supervisor collects a server's facts while it serves (exec/live.py) and again at its exit,
# and re-reading ~150 RECORDs each time was most of the finish. An install or removal adds
# or removes a *.dist-info entry, which moves the directory's mtime.
_SITE_MEMO: dict[str, tuple[int, dict[str, Owned]]] = {}


def _site_index(root: str) -> dict[str, Owned]:
    try:
        stamp = os.stat(root).st_mtime_ns
    except OSError:
        stamp = -1
    held = _SITE_MEMO.get(root)
    if held is not None and held[0] == stamp and stamp != -1:
        return held[1]
    index: dict[str, Owned] = {}
    for dist_info in sorted(Path(root).glob("*.dist-info")):
        _read_record(root, dist_info, index)
    _SITE_MEMO[root] = (stamp, index)
    return index


class Installed:
    def __init__(self) -> None:
        self._sites: dict[str, dict[str, Owned]] = {}
        self._dpkg: dict[str, str] | None = None
        self._conda: dict[str, dict[str, str]] = {}

    def wheel_files(self, root: str) -> dict[str, Owned]:
        """Every file the RECORDs under one site directory list: full path -> Owned."""
        if root not in self._sites:
            self._sites[root] = _site_index(root)
        return self._sites[root]

    def wheel(self, path: str) -> Owned | None:
        root = site_root(path)
        return self.wheel_files(root).get(os.path.normpath(path)) if root else None

    def dpkg(self, path: str) -> str | None:
        if self._dpkg is None:
            self._dpkg = {}
            for lst in DPKG_INFO.glob("*.list") if DPKG_INFO.is_dir() else []:
                pkg = lst.name[: -len(".list")]
                try:
                    for line in lst.read_text(errors="replace").splitlines():
                        self._dpkg[line] = pkg
                except OSError:
                    continue
        for candidate in _usrmerge_aliases(path):
            if candidate in self._dpkg:
                return self._dpkg[candidate]
        return None

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
