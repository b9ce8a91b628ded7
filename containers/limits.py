"""How many bytes of each kind of member the catalogers read into memory (issue #19 §4).

A member over its kind's limit is skipped with a warning recorded in the scan (and the lock):
its package is then missing or partial, and the warning says so. The bytes the walk holds at
once (the final view's wanted files plus the layer being read) are bounded by MAX_RETAINED;
past that the image is refused, since skipping more would silently drop packages.
Real images sit far under these: torch's RECORD (~15,000 rows) is ~2 MB, a large dpkg
status ~5 MB.
"""

from __future__ import annotations

KiB, MiB = 1 << 10, 1 << 20
MAX_RETAINED = 128 * MiB
_BY_BASENAME = {
    "METADATA": 8 * MiB,
    "PKG-INFO": 8 * MiB,
    "RECORD": 32 * MiB,
    "INSTALLER": 64 * KiB,
    "os-release": 64 * KiB,
    "status": 64 * MiB,  # var/lib/dpkg/status
    "installed": 64 * MiB,  # lib/apk/db/installed (every file's line and checksum)
}
_BY_SUFFIX = (
    (".json", 16 * MiB),  # conda-meta records, cuda version.json
    (".list", 32 * MiB),  # dpkg file lists (filtered down to a few lines once read)
    (".md5sums", 16 * MiB),
    (".egg-info", 8 * MiB),
)
DEFAULT = 4 * MiB  # dpkg status.d entries and anything else a cataloger asks for


def member_limit(path: str) -> int:
    """The most bytes read of the member at `path` (a wanted file)."""
    base = path.rpartition("/")[2]
    limit = _BY_BASENAME.get(base)
    if limit is not None:
        return limit
    for suffix, limit in _BY_SUFFIX:
        if base.endswith(suffix):
            return limit
    return DEFAULT
