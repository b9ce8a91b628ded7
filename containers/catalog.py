"""The registered catalogers, and the dispatch of the layer walk's paths over their globs.

Each cataloger (`containers/catalogers/<ecosystem>.py`) owns its globs and the pure parse
functions behind them (see `catalogers.base`); nothing here names a file of any format.
`Dispatch` answers the walk's question for every regular file (what to keep of it) with one
dictionary look-up or a few substring tests before any regular expression runs, and tells
which cataloger owns a path; `DbHistory` and `os_section` read the OS package databases
(dpkg, apk) the same way, each parsed once per layer that rewrites it.
"""

from __future__ import annotations

import re
from typing import Any

from containers.catalogers import apk, cuda, dpkg, os_release, python_dist
from containers.catalogers.base import Cataloger, Glob, expand, translate
from containers.walk import CONTENT, NAME, FileView

# first match wins, in this order
CATALOGERS: tuple[Cataloger, ...] = (
    python_dist.CATALOGER,
    cuda.CATALOGER,
    dpkg.CATALOGER,
    apk.CATALOGER,
    os_release.CATALOGER,
)
OS_DATABASES = tuple(c for c in CATALOGERS if c.os_key)
_KEEP = {"content": CONTENT, "name": NAME}
_LITERAL = re.compile(r"[^*?\[]+")


class _Entry:
    __slots__ = ("cataloger", "glob", "keep", "order", "regex")

    def __init__(self, order: int, cataloger: Cataloger, glob: Glob, pattern: str) -> None:
        self.order, self.cataloger, self.glob = order, cataloger, glob
        self.regex = re.compile(translate(pattern))
        self.keep = _KEEP.get(glob.keep, glob.keep) if isinstance(glob.keep, str) else glob.keep


class Dispatch:
    """The globs of `catalogers` indexed by what is cheapest to test first: a literal file
    name, else a literal parent directory, else the longest literal run of the file name."""

    def __init__(self, catalogers: tuple[Cataloger, ...], verify: bool) -> None:
        self.by_name: dict[str, list[_Entry]] = {}
        self.by_parent: dict[str, list[_Entry]] = {}
        self.by_part: dict[str, list[_Entry]] = {}
        order = 0
        for cat in catalogers:
            for glob in cat.globs:
                if glob.verify and not verify:
                    continue
                for pattern in expand(glob.pattern):
                    self._index(_Entry(order, cat, glob, pattern), pattern)
                    order += 1
        parts = "|".join(re.escape(p) for p in sorted(self.by_part, key=len, reverse=True))
        self._any_part = re.compile(parts or "(?!)").search

    def _index(self, entry: _Entry, pattern: str) -> None:
        parent, _, base = pattern.rpartition("/")
        if _LITERAL.fullmatch(base):
            self.by_name.setdefault(base, []).append(entry)
        elif parent and _LITERAL.fullmatch(parent):
            self.by_parent.setdefault(parent, []).append(entry)
        else:
            part = max(_LITERAL.findall(base), key=len, default="")
            self.by_part.setdefault(part, []).append(entry)

    def match(self, path: str) -> _Entry | None:
        """The first glob (in registration order) that `path` matches, or None."""
        parent, _, base = path.rpartition("/")
        named, placed = self.by_name.get(base), self.by_parent.get(parent)
        in_name = self._any_part(base)  # one scan of the name for every literal run at once
        if named is None and placed is None and in_name is None:
            return None  # most files: three look-ups, no regular expression of a glob
        groups = [g for g in (named, placed) if g]
        if in_name is not None:
            groups += [g for part, g in self.by_part.items() if part in base]
        best = None
        for group in groups:
            for e in group:
                if (best is None or e.order < best.order) and e.regex.fullmatch(path) and (
                    e.glob.test is None or e.glob.test(path)
                ):
                    best = e
        return best

    def wants(self, path: str) -> object:
        """What the walk keeps of `path` (None, NAME, CONTENT or a filter): called for every
        regular file of every layer."""
        e = self.match(path)
        return None if e is None else e.keep

    def paths(self, view: FileView, glob: Glob) -> list[str]:
        """The view's kept files that `glob` owns, sorted."""
        return sorted(p for p in view.files if (e := self.match(p)) is not None and e.glob is glob)


CATALOG = Dispatch(CATALOGERS, verify=False)
VERIFYING = Dispatch(CATALOGERS, verify=True)  # with the claims file verification reads
wants = CATALOG.wants
wants_verifying = VERIFYING.wants


class DbHistory:
    """Which layer introduced each package of the databases every installing layer rewrites
    (`Glob.layered`: dpkg's status, apk's installed); the file's own layer says nothing.
    Each database is parsed once per layer that writes it, and the last parse is what the
    final view holds (the walk keeps the last write)."""

    def __init__(self) -> None:
        self.layered = {g.pattern: g for c in OS_DATABASES for g in c.globs if g.layered}
        for pattern in self.layered:  # a database is one file: looked up by its path
            assert _LITERAL.fullmatch(pattern) and "{" not in pattern, pattern
        # path -> key -> (version, layer that introduced it at this version)
        self.introduced: dict[str, dict[str, tuple[str, int]]] = {}
        self.parsed: dict[str, tuple[int, list]] = {}  # path -> (layer, packages)

    def on_layer(self, index: int, staged: dict[str, bytes]) -> None:
        for path, glob in self.layered.items():
            data = staged.get(path)
            if data is None:
                continue
            old = self.introduced.get(path, {})
            now = {}
            packages = glob.parse(data.decode("utf-8", "replace"))
            for pkg in packages:
                seen = old.get(pkg.key)
                now[pkg.key] = seen if seen and seen[0] == pkg.version else (pkg.version, index)
            self.introduced[path] = now
            self.parsed[path] = (index, packages)

    def packages(self, path: str, layer: int, data: bytes) -> list[tuple[Any, int]]:
        """(package, layer that introduced it) of the final view's database at `path`."""
        done = self.parsed.get(path)
        packages = done[1] if done and done[0] == layer else (
            self.layered[path].parse(data.decode("utf-8", "replace"))
        )
        introduced = self.introduced.get(path, {})
        return [(p, introduced.get(p.key, ("", layer))[1]) for p in packages]


def databases_in(staged: dict[str, bytes]) -> set[str]:
    """The OS package databases (`dpkg`, `apk`) some of a layer's kept files belong to."""
    found = set()
    for path in staged:
        e = CATALOG.match(path)
        if e is not None and e.cataloger.os_key:
            found.add(e.cataloger.os_key)
    return found


def release(view: FileView) -> dict[str, str] | str:
    """os-release's facts: the first of its globs found, through the image's symlinks."""
    for glob in os_release.CATALOGER.globs:
        found = view.read(glob.pattern)
        if found is not None:
            return glob.parse(found[1].decode("utf-8", "replace"))
    return "unavailable: no os-release file"


def database_packages(
    view: FileView, cat: Cataloger, history: DbHistory
) -> list[tuple[Any, int]] | None:
    """(package, layer) of one OS package database in the final view; None: none there."""
    found: list[tuple[Any, int]] = []
    present = False
    for glob in cat.globs:
        if glob.parse is None:
            continue
        if glob.layered:
            kept = view.files.get(glob.pattern)
            if kept is not None:
                present = True
                found += history.packages(glob.pattern, *kept)
            continue
        for path in CATALOG.paths(view, glob):
            layer, data = view.files[path]
            found += [(p, layer) for p in glob.parse(data.decode("utf-8", "replace"))]
    return found if present or found else None


def os_section(view: FileView, history: DbHistory) -> tuple[dict[str, Any], dict[str, list]]:
    """The `os` section (release, and `dpkg`/`apk` packages with the layer that introduced
    each), and each database's parsed packages with their layers (their file lists)."""
    section: dict[str, Any] = {"release": release(view)}
    parsed: dict[str, list] = {}
    for cat in OS_DATABASES:
        found = database_packages(view, cat, history)
        if found is None:
            continue
        parsed[cat.os_key] = found
        section[cat.os_key] = {pkg.key: {**pkg.facts(), "layer": layer} for pkg, layer in found}
    return section, parsed
