"""Where a locked package's artifact hash comes from, since an installed environment does
not keep the wheel it was installed from.

Sources, tried in order, each recorded with the hash (`tool.prov.hash-source`):
1. `direct_url.json` (PEP 610) archive hashes, written by the installer itself;
2. wheel files in local `--find-links` directories, hashed here;
3. a package index's simple API (PEP 691 JSON, PEP 503 HTML `#sha256=` links).
When none answers, the lock says so; no hash is ever invented.
"""

from __future__ import annotations

import hashlib
import json
import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from provenance.model.names import normalize_name as normalize


@dataclass(frozen=True)
class Artifact:
    filename: str
    sha256: str
    source: str  # "direct_url", "find-links:DIR", "index:URL"
    url: str = ""
    path: str = ""
    size: int | None = None


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
        if key and key[0] == normalize(name) and same_version(key[1]):
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
        if (k := _sdist_key(f)) and k[0] == normalize(name) and same_version(k[1])
    ]
    return sdists[:1]


@dataclass
class LocalWheels:
    """Wheel and sdist files in local directories (pip's --find-links)."""

    dirs: list[Path]
    _files: dict[str, Path] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for d in self.dirs:
            if d.is_dir():
                for f in sorted(d.iterdir()):
                    if f.suffix == ".whl" or f.name.endswith((".tar.gz", ".zip")):
                        self._files.setdefault(f.name, f)

    def find(self, name: str, version: str, tags: frozenset[str] | None) -> list[Artifact]:
        out = []
        for filename in pick(list(self._files), name, version, tags):
            path = self._files[filename]
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            out.append(
                Artifact(
                    filename,
                    digest,
                    f"find-links:{path.parent}",
                    path=str(path),
                    size=path.stat().st_size,
                )
            )
        return out


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
        page = f"{self.url.rstrip('/')}/{normalize(name)}/"
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


def from_direct_url(entry: dict) -> list[Artifact]:
    direct = entry.get("direct_url") or {}
    sha = direct.get("archive_sha256")
    if not sha and str(direct.get("archive_hash", "")).startswith("sha256="):
        sha = direct["archive_hash"].split("=", 1)[1]
    url = str(direct.get("url", ""))
    if not sha or not url:
        return []
    return [Artifact(url.rsplit("/", 1)[-1], sha, "direct_url", url=url)]
