"""Debian's package database: `var/lib/dpkg/status` and distroless `status.d/*` files.

Stanzas are RFC 822-style paragraphs. A package counts as present when its files are on
disk: `config-files` and `not-installed` states are skipped, as are stanzas that only mark
a package for removal after it is gone. Multi-Arch: same packages are keyed `name:arch`,
as `dpkg-query -W` prints them.
"""

from __future__ import annotations

from dataclasses import dataclass

from containers.catalogers.base import Cataloger, Glob

ADMIN = "var/lib/dpkg/"
STATUS = ADMIN + "status"
STATUS_D = ADMIN + "status.d/"  # distroless: one stanza per file, `<name>.md5sums` beside
INFO = ADMIN + "info/"  # `<name>.list`, `<name>.md5sums`

# States whose files are (at least partly) on disk; see dpkg-query(1) "Package state".
_PRESENT_STATES = frozenset(
    {
        "installed",
        "half-configured",
        "unpacked",
        "half-installed",
        "triggers-awaited",
        "triggers-pending",
    }
)


@dataclass(frozen=True)
class DpkgPackage:
    name: str
    version: str
    architecture: str
    source: str
    source_version: str
    state: str
    multi_arch: str
    md5sums_key: str = ""
    # (path, md5 hex) of its conffiles, as `dpkg --verify` checks them (md5sums leaves them
    # out); obsolete ones and those without a digest yet (`newconffile`) are left out
    conffiles: tuple = ()

    @property
    def key(self) -> str:
        """The name as `dpkg-query -W` shows it (`libc6:amd64` for Multi-Arch: same)."""
        if self.multi_arch == "same" and self.architecture not in ("", "all"):
            return f"{self.name}:{self.architecture}"
        return self.name

    def facts(self) -> dict:
        """The manifest's facts of this package (`os.dpkg.<key>`), on a host or in an image:
        the source only where it is another package or version."""
        out = {"version": self.version, "arch": self.architecture}
        if self.source != self.name or self.source_version != self.version:
            out["source"] = self.source
            out["source_version"] = self.source_version
        if self.state != "installed":
            out["state"] = self.state
        return out


def _paragraphs(text: str):
    fields: dict[str, str] = {}
    last = None
    for line in text.splitlines():
        if not line.strip():
            if fields:
                yield fields
            fields, last = {}, None
            continue
        if line[0] in " \t":
            if last is not None:
                fields[last] += "\n" + line.strip()
            continue
        name, sep, value = line.partition(":")
        if not sep:
            continue
        last = name.strip()
        fields[last] = value.strip()
    if fields:
        yield fields


def _source(fields: dict[str, str], version: str) -> tuple[str, str]:
    """`Source: name (version)` when the source version differs from the binary's."""
    raw = fields.get("Source", "")
    if not raw:
        return fields.get("Package", ""), version
    name, _, rest = raw.partition(" ")
    src_version = rest.strip().strip("()") or version
    return name, src_version


def parse_status(text: str) -> list[DpkgPackage]:
    """Packages present according to one status file's text."""
    packages = []
    for fields in _paragraphs(text):
        name = fields.get("Package")
        status = fields.get("Status", "").split()
        if not name or len(status) != 3:
            continue
        state = status[2]
        if state not in _PRESENT_STATES:
            continue
        version = fields.get("Version", "")
        src_name, src_version = _source(fields, version)
        packages.append(
            DpkgPackage(
                name=name,
                version=version,
                architecture=fields.get("Architecture", ""),
                source=src_name,
                source_version=src_version,
                state=state,
                multi_arch=fields.get("Multi-Arch", ""),
                conffiles=_conffiles(fields.get("Conffiles", "")),
            )
        )
    return packages


def _conffiles(text: str) -> tuple:
    found = []
    for line in text.splitlines():
        words = line.split()
        if len(words) == 2 and len(words[1]) == 32:
            found.append((words[0], words[1]))
    return tuple(found)


def parse_status_d_entry(text: str) -> list[DpkgPackage]:
    """A distroless `status.d/NAME` file: one stanza, often without a Status field."""
    fixed = []
    for fields in _paragraphs(text):
        fields.setdefault("Status", "install ok installed")
        fixed.append("\n".join(f"{k}: {v}" for k, v in fields.items()))
    return parse_status("\n\n".join(fixed))


def parse_list_owned(text: str) -> list[str]:
    """The Python metadata paths a package's `info/<pkg>.list` file lists."""
    lines = (line.rstrip("/") for line in text.splitlines())
    return [line for line in lines if line.endswith((".dist-info", ".egg-info"))]


def list_filter(data: bytes) -> bytes:
    """What the layer walk keeps of an `info/<pkg>.list` file: the Python metadata and
    shared-object lines (who owns them), so memory stays small."""
    from containers.catalogers.cuda import shared_object

    text = data.decode("utf-8", "replace")
    libs = [x for x in text.splitlines() if ".so" in x and shared_object(x.rsplit("/")[-1])]
    return "\n".join(parse_list_owned(text) + libs).encode()


CATALOGER = Cataloger(
    "dpkg-db-cataloger",
    [
        Glob(STATUS, parse=parse_status, layered=True),
        Glob(STATUS_D + "*", test=lambda path: not path.endswith(".md5sums"),
             parse=parse_status_d_entry),
        Glob(INFO + "*.list", keep=list_filter),
        # the claims file verification checks (md5 of each file the package installed)
        Glob(INFO + "*.md5sums", verify=True),
        Glob(STATUS_D + "*.md5sums", verify=True),
    ],
    os_key="dpkg",
)
