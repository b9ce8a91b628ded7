"""How much of an untrusted image prov reads: bytes per member, and counts (issues #19, #30).

A member over its kind's limit is skipped with a warning recorded in the scan (and the lock):
its package is then missing or partial, and the warning says so. The bytes the walk holds at
once (the final view's wanted files plus the layer being read) are bounded by MAX_RETAINED;
past that the image is refused, since skipping more would silently drop packages.
Real images sit far under these: torch's RECORD (~15,000 rows) is ~2 MB, a large dpkg
status ~5 MB.
"""

from __future__ import annotations

from containers.errors import ImageError

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


# Counts an image document states (issue #30). Past one, the image is refused in one line
# before the work it would cost; real images sit far under each.
MAX_LAYERS = 1_000  # layer listings in a manifest (Docker's overlay2 stacks at most 128)
MAX_CONFIG_ENTRIES = 10_000  # each list or map of the config: Env, Labels, history, ...
MAX_PYTHON_DISTS = 50_000  # dist-info and egg-info directories (the vLLM image has 252)


def check_count(count: int, limit: int, what: str) -> None:
    """Refuse `count` things past `limit` (`what` names them for the message)."""
    if count > limit:
        raise ImageError(f"{what}: {count}, over the limit of {limit}; refused")
