"""`/etc/os-release` (or `/usr/lib/os-release`): shell-style KEY=value lines."""

from __future__ import annotations

import shlex

from containers.catalogers.base import Cataloger, Glob

_KEPT = (
    "ID",
    "ID_LIKE",
    "VERSION_ID",
    "VERSION_CODENAME",
    "PRETTY_NAME",
    "NAME",
    "BUILD_ID",
    "VARIANT_ID",
)


def parse_os_release(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        try:
            parts = shlex.split(value)
        except ValueError:
            continue
        if key in _KEPT:
            out[key.lower()] = parts[0] if parts else ""
    return out


# the first one found wins (`etc/os-release` is often a symlink to the other): in an image
# and on a host (`provenance.collectors.os_info`)
OS_RELEASE_PATHS = ("etc/os-release", "usr/lib/os-release")
CATALOGER = Cataloger(
    "os-release-cataloger", [Glob(path, parse=parse_os_release) for path in OS_RELEASE_PATHS]
)
