"""Alpine's package database: `lib/apk/db/installed` (apk-tools' installed database).

One paragraph per package, paragraphs separated by a blank line, each line a one-letter
field, a colon and the value, as in an APKINDEX: `P:` name, `V:` version, `A:` arch, `o:`
origin (the source package), `m:` maintainer, `U:` url, `L:` licence, `C:` the package's
checksum. After them, the package's files: `F:` a directory (relative to the root), then
`R:` each file in it, each followed by `a:` (owner, group, mode) and `Z:` its checksum:
`Q1` and the base64 of the SHA-1 of the file's content (of a symlink, of its target), or
an older database's hex MD5. Every package listed is installed (apk has no removed state).
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

from containers.catalogers.base import Cataloger, Glob

DB = "lib/apk/db/installed"


@dataclass(frozen=True)
class ApkPackage:
    name: str
    version: str
    architecture: str
    origin: str
    maintainer: str = ""
    url: str = ""
    license: str = ""
    files: tuple = ()  # ((root-relative path, Z: checksum or ""), ...)

    @property
    def key(self) -> str:
        return self.name

    def facts(self) -> dict:
        """The manifest's facts of this package (`os.apk.<name>`): the origin only where it
        is another package, as dpkg's source."""
        out = {"version": self.version, "arch": self.architecture}
        if self.origin and self.origin != self.name:
            out["origin"] = self.origin
        return out


_FIELDS = {"P": "name", "V": "version", "A": "architecture", "o": "origin",
           "m": "maintainer", "U": "url", "L": "license"}


def _package(fields: dict, files: list) -> ApkPackage | None:
    if not fields.get("name"):
        return None
    fields.setdefault("origin", fields["name"])
    return ApkPackage(
        name=fields["name"], version=fields.get("version", ""),
        architecture=fields.get("architecture", ""), origin=fields["origin"],
        maintainer=fields.get("maintainer", ""), url=fields.get("url", ""),
        license=fields.get("license", ""), files=tuple(files),
    )


def parse_installed(text: str) -> list:
    """The packages of one installed database's text, in its order."""
    packages = []
    fields: dict = {}
    files: list = []
    folder, current = "", None  # current: the index of the file a `Z:` line is about
    for line in text.splitlines() + [""]:
        if not line:
            pkg = _package(fields, files)
            if pkg is not None:
                packages.append(pkg)
            fields, files, folder, current = {}, [], "", None
            continue
        if len(line) < 2 or line[1] != ":":
            continue
        tag, value = line[0], line[2:]
        if tag in _FIELDS:
            fields[_FIELDS[tag]] = value
        elif tag == "F":
            folder, current = value.strip("/"), None
        elif tag == "R":
            current = len(files)
            files.append((f"{folder}/{value}" if folder else value, ""))
        elif tag == "Z" and current is not None:
            files[current] = (files[current][0], value)
    return packages


def checksum_digest(value: str) -> tuple | None:
    """(algorithm, digest bytes) of one `Z:` checksum: `Q1` + base64 SHA-1, or hex MD5.
    None: not a checksum apk writes."""
    if value.startswith("Q1"):
        try:
            raw = base64.b64decode(value[2:], validate=True)
        except (binascii.Error, ValueError):
            return None
        return ("sha1", raw) if len(raw) == 20 else None
    if len(value) == 32:
        try:
            return "md5", bytes.fromhex(value)
        except ValueError:
            return None
    return None


CATALOGER = Cataloger(
    "apk-db-cataloger", [Glob(DB, parse=parse_installed, layered=True)], os_key="apk"
)
