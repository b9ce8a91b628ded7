"""Python distributions: names, RECORD rows and the content fingerprint of one install.

Standard library only and Python 3.8-compatible: the host collector
(`provenance.collectors.python_env`) imports this module inside foreign interpreters, and the
image scanner uses the same functions, so a package in an image and on a host fingerprint
identically and `prov diff` can compare them.
"""

from __future__ import annotations

import csv
import hashlib
import io
import re

from containers.catalogers.base import Cataloger, Glob

_NORMALIZE = re.compile(r"[-_.]+")
_HEX = re.compile(r"[0-9a-fA-F]+")
_B64 = re.compile(r"[A-Za-z0-9_-]+")
# Files an installer writes into `<name>.dist-info/` and lists in RECORD: they describe the
# act of installing (who, when, from where), not the wheel, so two installs of one wheel by
# different tools must leave them out of the content fingerprint. The ONE list: the
# environment collector and the image cataloger both fingerprint through
# `content_fingerprint` below. Surveyed installers and what they add:
#   pip (26.x), uv (0.13), pdm (2.29), poetry (2.x, via `installer`): the PEP 376/610 files;
#   uv also uv_cache.json and uv_build.json; pdm also REFER_TO (symlink cache);
#   `pip install --user` and editable installs: nothing beyond these (an editable wheel's
#   `__editable__*` files come from the build backend: content, though path-dependent);
#   conda: INSTALLER ("conda"); its own records live in `<prefix>/conda-meta/`, outside
#   any RECORD; Debian python3-* packages: none (dh-python ships RECORD, METADATA, WHEEL).
# Generated console scripts (`../bin/...`) and byte-code are dropped by path, below.
INSTALLER_FILES: dict[str, str] = {
    "RECORD": "PEP 376/627: every installer rewrites it with the installed paths and hashes",
    "INSTALLER": "PEP 376/627: pip, uv, pdm, poetry, conda write their own name",
    "REQUESTED": "PEP 376/627: pip, uv, pdm mark a distribution the user asked for by name",
    "direct_url.json": "PEP 610: pip, uv, pdm, poetry record the URL or path installed from",
    "uv_cache.json": "uv: cache key (timestamp, commit, tags) of a local wheel or source tree",
    "uv_build.json": "uv: the build settings of a wheel uv built from source",
    "REFER_TO": "pdm (install.cache_method = symlink): the cached package it links to",
}
NO_RECORD = "unavailable: no RECORD (egg-info or foreign installer)"


def normalize_name(name: str) -> str:
    """PEP 503 normalised project name: `packaging.utils.canonicalize_name`, written out
    because this module runs inside interpreters that need not have `packaging` (see the
    module's docstring); the rest of prov calls packaging's. A test holds them equal."""
    return _NORMALIZE.sub("-", name).lower()


def record_rows(text: str) -> list[list[str]]:
    """The CSV rows of a RECORD file (blank rows dropped).

    Without a quote character no CSV field can hold a comma, so a plain split gives exactly
    what csv.reader would, at half the cost (torch's RECORD has ~15,000 rows).
    """
    if '"' not in text:
        return [line.split(",") for line in text.splitlines() if line]
    try:
        return [row for row in csv.reader(io.StringIO(text)) if row]
    except csv.Error:  # an unterminated quote, a field past csv's limit: a hostile RECORD
        return [line.split(",") for line in text.splitlines() if line and '"' not in line]


def headers(text: str) -> dict[str, str]:
    """Name and Version from a METADATA/PKG-INFO header block (faster than email.parser)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        if not line:
            break
        key, sep, value = line.partition(":")
        if sep and key in ("Name", "Version") and key not in out:
            out[key] = value.strip()
    return out


def checked_rows(rows: list) -> dict[str, str]:
    """path -> RECORD hash of the rows an installer would check.

    A RECORD may hold two rows for one path. pip byte-compiles after unpacking and lists each
    `.pyc` it wrote with an empty hash (PEP 376 allows no hash for installer-generated files);
    when the wheel ships that `.pyc` too (numpy 2.2.6 does), the wheel's hashed row stays
    beside it, and pip sorts RECORD, so the hash-less row comes *first*. The file on disk is
    pip's, so a path with any hash-less row is not checked; among hashed rows the last wins.
    """
    last: dict[str, str] = {}
    generated: set[str] = set()
    for row in rows:
        if not row:
            continue
        if len(row) > 1 and row[1]:
            last[row[0]] = row[1]
        else:
            generated.add(row[0])
    for path in generated:
        last.pop(path, None)
    return last


def record_digest(value: str) -> tuple[str, bytes] | None:
    """(algorithm, digest bytes) of one RECORD hash field (`sha256=<value>`), read as the
    installers read it: the algorithm is the prefix (any hashlib algorithm), the value
    urlsafe base64 without padding (PEP 376/627); where a distribution writes hex instead
    (Debian's dh-python does for python3-distro, python3-blinker), the length tells: a
    sha256 is 43 base64 characters or 64 hex digits. None: not a digest of that algorithm
    (an empty field, an unknown algorithm, a value of the wrong size or alphabet)."""
    import base64
    import binascii

    algo, sep, text = value.partition("=")
    algo = algo.strip().lower()
    text = text.strip().rstrip("=")
    if not sep or not text:
        return None
    try:
        size = hashlib.new(algo).digest_size
    except (ValueError, TypeError):
        return None
    if len(text) == 2 * size and _HEX.fullmatch(text):
        return algo, bytes.fromhex(text)
    if len(text) != -(-size * 4 // 3) or not _B64.fullmatch(text):
        return None
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        return None
    return (algo, raw) if len(raw) == size else None


def is_installer_file(path: str) -> bool:
    """True for a RECORD path naming a file the installer wrote into the `.dist-info`."""
    parent, sep, name = path.rpartition("/")
    return bool(sep) and "/" not in parent and parent.endswith(".dist-info") and (
        name in INSTALLER_FILES
    )


def content_fingerprint(rows: list) -> str:
    """sha256 over the sorted (path, hash) rows that came from the wheel itself.

    Excluded: rows without a hash, byte-code (.pyc embeds source mtimes), installer-written
    files (INSTALLER_FILES), and scripts the installer generated outside the package (their
    shebang names the interpreter path). Two installs of the same wheel into different venvs,
    by pip, uv or pdm, agree.
    """
    kept = []
    append = kept.append
    for path, digest in checked_rows(rows).items():
        if path.endswith(".pyc") or "__pycache__" in path:
            continue
        if path[:2] == ".." and ("/bin/" in path or "/Scripts/" in path):
            continue
        if is_installer_file(path):
            continue
        append(path + "," + digest)
    kept.sort()
    return "sha256:" + hashlib.sha256("\n".join(kept).encode("utf-8")).hexdigest()


def record_facts(record: bytes | None) -> dict[str, str]:
    """`fingerprint` and `record_sha256` of one RECORD file's bytes (None: no RECORD)."""
    if record is None:
        return {"fingerprint": NO_RECORD}
    rows = record_rows(record.decode("utf-8", "replace"))
    return {
        "record_sha256": "sha256:" + hashlib.sha256(record).hexdigest(),
        "fingerprint": content_fingerprint(rows),
    }


def parse_conda_meta(text: str) -> dict[str, str]:
    """name and version from one `conda-meta/<pkg>.json` record (empty if malformed)."""
    from containers.jsondoc import load_content

    doc = load_content(text)
    if not isinstance(doc, dict):
        return {}
    name, version = doc.get("name"), doc.get("version")
    if not isinstance(name, str) or not isinstance(version, str):
        return {}
    return {"name": name, "version": version}


# The image side reads a distribution's matches together (`containers.dists`): METADATA or
# PKG-INFO (`headers`) with its RECORD (`record_facts`) and INSTALLER; conda's records one by
# one (`parse_conda_meta`).
CATALOGER = Cataloger(
    "python-installed-package-cataloger",
    [
        Glob("**/{site,dist}-packages/*.{dist,egg}-info/{METADATA,RECORD,INSTALLER,PKG-INFO}"),
        Glob("**/{site,dist}-packages/*.egg-info"),  # a distutils egg-info file
        Glob("**/conda-meta/*.json", parse=parse_conda_meta),
    ],
)
