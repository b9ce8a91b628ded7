"""Where a locked package's artifact comes from, since an installed environment does not
keep the wheel it was installed from, and its installer records the origin only for a
direct URL or path install (PEP 610 `direct_url.json`; pip and uv write nothing for an
index or `--find-links` install).

Sources, each recorded with the artifact (`tool.prov.hash-source`):
1. `direct_url.json`: the URL or path the installer recorded, with its archive hash (pip
   records one; uv does not, so a local file it names is hashed here);
2. package indexes' simple API (PEP 691 JSON, PEP 503 HTML `#sha256=` links): the file an
   index serves for that name, version and wheel tags;
3. wheel files in directories the user names (`--find-links`), hashed here and accepted only
   when the content fingerprint installing them would give equals the installed one.
When none answers, the lock says so; no hash or location is ever invented.
"""

from __future__ import annotations

import dataclasses
import json
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from packaging.utils import canonicalize_name

from provenance.model.digests import file_sha256, hex_of


@dataclass(frozen=True)
class Artifact:
    filename: str
    sha256: str
    source: str  # "direct_url", "find-links:DIR", "index:URL"
    url: str = ""
    path: str = ""
    size: int | None = None
    # the content fingerprint an install of this wheel has (computed for local files only)
    fingerprint: str | None = None


# The one content fingerprint (containers.catalogers.content_fingerprint), handed in by the
# CLI: this room imports only the model.
Fingerprint = Callable[[list[list[str]]], str]
_MAX_RECORD = 64 << 20  # a RECORD larger than torch's (~2 MB) by far: a hostile wheel


def _wheel_key(filename: str) -> tuple[str, str, frozenset[str]] | None:
    """(normalized name, version, tags) of a wheel filename; None if not a wheel name."""
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    try:
        name, version, _build, tags = parse_wheel_filename(filename)
    except InvalidWheelFilename:
        return None
    return str(name), str(version), frozenset(str(t) for t in tags)


def _sdist_key(filename: str) -> tuple[str, str] | None:
    from packaging.utils import InvalidSdistFilename, parse_sdist_filename

    try:
        name, version = parse_sdist_filename(filename)
    except InvalidSdistFilename:
        return None
    return str(name), str(version)


def pick(filenames: list[str], name: str, version: str, tags: frozenset[str] | None) -> list[str]:
    """The wheels of `name==version` whose tags equal the installed WHEEL's tags; without
    known tags, every wheel of that version (a multi-platform entry), else the sdist."""
    from packaging.version import InvalidVersion, Version

    def same_version(v: str) -> bool:
        try:
            return Version(v) == Version(version)
        except InvalidVersion:
            return v == version

    wheels = []
    for f in filenames:
        key = _wheel_key(f)
        if key and key[0] == canonicalize_name(name) and same_version(key[1]):
            wheels.append((f, key[2]))
    if tags:
        exact = [f for f, t in wheels if t == tags]
        if exact:
            return exact
    if wheels:
        return [f for f, _ in wheels]
    sdists = [
        f
        for f in filenames
        if (k := _sdist_key(f)) and k[0] == canonicalize_name(name) and same_version(k[1])
    ]
    return sdists[:1]


def installed_rows(wheel: Path) -> list[list[str]] | None:
    """The wheel's RECORD rows with each path where an installer puts it, relative to
    site-packages: `NAME.data/purelib/` and `platlib/` at the top, `data/` at the prefix
    (three levels up, as in a venv or /usr); scripts and headers are left out (installers
    rewrite a script's shebang; the fingerprint skips scripts). None: not a readable wheel."""
    import csv
    import io
    import zipfile

    try:
        with zipfile.ZipFile(wheel) as zf:
            records = [i for i in zf.infolist() if i.filename.count("/") == 1
                       and i.filename.endswith(".dist-info/RECORD")]
            if len(records) != 1 or records[0].file_size > _MAX_RECORD:
                return None
            text = zf.read(records[0]).decode("utf-8", "replace")
        rows = [row for row in csv.reader(io.StringIO(text)) if row]
    except (OSError, ValueError, zipfile.BadZipFile, csv.Error):
        return None
    out = []
    for row in rows:
        top, _, rest = row[0].partition("/")
        if top.endswith(".data") and rest:
            scheme, _, inner = rest.partition("/")
            if scheme not in ("purelib", "platlib", "data"):
                continue
            row = ["../../../" + inner if scheme == "data" else inner, *row[1:]]
        out.append(row)
    return out


def local_artifact(path: Path, source: str, fingerprint: Fingerprint | None) -> Artifact:
    """A file on this machine: its sha256 and, for a wheel, the fingerprint installing it
    gives (None when no fingerprint function is given or its RECORD is unreadable)."""
    digest = hex_of(file_sha256(path))  # a lock's `hashes` hold the bare hex
    rows = installed_rows(path) if fingerprint and path.suffix == ".whl" else None
    return Artifact(path.name, digest, source, path=str(path.resolve()),
                    size=path.stat().st_size,
                    fingerprint=fingerprint(rows) if fingerprint and rows is not None else None)


@dataclass
class LocalWheels:
    """Wheel and sdist files in directories the user names (`--find-links`)."""

    dirs: list[Path]
    fingerprint: Fingerprint | None = None
    _files: dict[str, Path] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for d in self.dirs:
            if d.is_dir():
                for f in sorted(d.iterdir()):
                    if f.suffix == ".whl" or f.name.endswith((".tar.gz", ".zip")):
                        self._files.setdefault(f.name, f)

    def find(self, name: str, version: str, tags: frozenset[str] | None) -> list[Artifact]:
        return [
            local_artifact(self._files[f], f"find-links:{self._files[f].parent}",
                           self.fingerprint)
            for f in pick(list(self._files), name, version, tags)
        ]


_HTML_LINK = re.compile(r'href="(?P<href>[^"#]+)#sha256=(?P<sha>[0-9a-fA-F]{64})"')


@dataclass
class SimpleIndex:
    """A PEP 503/691 simple index; `unreachable` is set after the first network failure."""

    url: str
    timeout: float = 10.0
    unreachable: str = ""

    def files(self, name: str) -> dict[str, tuple[str, str]]:
        """filename -> (sha256, url) for every file the index lists for `name`."""
        if self.unreachable:
            return {}
        page = f"{self.url.rstrip('/')}/{canonicalize_name(name)}/"
        request = urllib.request.Request(
            page, headers={"Accept": "application/vnd.pypi.simple.v1+json, text/html;q=0.1"}
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as resp:
                ctype = resp.headers.get("content-type", "")
                body = resp.read()
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return {}
            self.unreachable = f"{self.url}: HTTP {exc.code}"
            return {}
        except (urllib.error.URLError, OSError, TimeoutError) as exc:
            self.unreachable = f"{self.url}: {getattr(exc, 'reason', exc)}"
            return {}
        out: dict[str, tuple[str, str]] = {}
        if "json" in ctype:
            for f in json.loads(body).get("files", []):
                sha = (f.get("hashes") or {}).get("sha256")
                if sha:
                    out[f["filename"]] = (sha, urllib.parse.urljoin(page, f.get("url", "")))
        else:
            for m in _HTML_LINK.finditer(body.decode("utf-8", "replace")):
                href = urllib.parse.urljoin(page, m.group("href"))
                out[href.rsplit("/", 1)[-1]] = (m.group("sha").lower(), href)
        return out

    def find(self, name: str, version: str, tags: frozenset[str] | None) -> list[Artifact]:
        listing = self.files(name)
        return [
            Artifact(f, listing[f][0], f"index:{self.url}", url=listing[f][1])
            for f in pick(list(listing), name, version, tags)
        ]


def from_direct_url(entry: dict, fingerprint: Fingerprint | None = None) -> list[Artifact]:
    """The archive the installer recorded (PEP 610) with its recorded hash (pip); a local
    file recorded without one (uv records none) is hashed here if it is still there."""
    direct = entry.get("direct_url") or {}
    url = str(direct.get("url", ""))
    if not url or direct.get("vcs_vcs") or "editable" in direct:
        return []
    sha = direct.get("archive_sha256")
    if not sha and str(direct.get("archive_hash", "")).startswith("sha256="):
        sha = direct["archive_hash"].split("=", 1)[1]
    local = None
    if url.startswith("file:"):
        local = Path(urllib.request.url2pathname(urllib.parse.urlsplit(url).path))
    if sha:
        name = local.name if local else urllib.parse.unquote(url.rsplit("/", 1)[-1])
        return [Artifact(name, sha, "direct_url", url="" if local else url,
                         path=str(local or ""))]
    if local is not None and local.is_file():  # no size: as when the installer hashed it
        found = local_artifact(local, "direct_url: file hashed here", fingerprint)
        return [dataclasses.replace(found, size=None)]
    return []
