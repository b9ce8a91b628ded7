"""The Python collector: the interpreter and every installed distribution on sys.path.

Standard library only, and Python 3.8-compatible, because `prov snapshot --python PATH` runs
this module inside the interpreter being inspected (`python -c ... main()`), which need not
have prov's dependencies. Versions come from the installed metadata (importlib.metadata),
as `pip list` reads them, never from import-time `__version__` strings.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import platform
import re
import sys
import sysconfig
from importlib import metadata
from pathlib import Path

from containers.catalogers import (
    NO_RECORD,
    content_fingerprint,
    normalize_name,
)
from containers.catalogers import headers as _headers
from containers.catalogers import record_rows as _record_rows

try:
    from provenance.model.redact import strip_url_credentials
except ImportError:  # pragma: no cover - only when run without prov on sys.path

    def strip_url_credentials(text):  # type: ignore[no-redef]
        return re.sub(r"://[^/@\s]+@", "://<redacted>@", text)


def interpreter() -> dict:
    build_no, build_date = platform.python_build()
    facts = {
        "implementation": sys.implementation.name,
        "version": platform.python_version(),
        "build": f"{build_no} ({build_date})",
        "compiler": platform.python_compiler(),
        "abi": sysconfig.get_config_var("SOABI") or "",
        "abiflags": getattr(sys, "abiflags", ""),
        "cache_tag": sys.implementation.cache_tag or "",
        "platform": sysconfig.get_platform(),
        "gil_disabled": bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
        "executable": sys.executable,
        "prefix": sys.prefix,
        "base_prefix": sys.base_prefix,
        "byteorder": sys.byteorder,
        "maxunicode": sys.maxunicode,
    }
    return facts


def _dist_dir(dist) -> Path | None:
    path = getattr(dist, "_path", None)
    return Path(path) if path is not None else None


def _direct_url(dist) -> dict | None:
    text = dist.read_text("direct_url.json")
    if not text:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return {"error": "direct_url.json is not valid JSON"}
    out = {}
    if isinstance(data.get("url"), str):
        out["url"] = strip_url_credentials(data["url"])
    if isinstance(data.get("dir_info"), dict):
        out["editable"] = bool(data["dir_info"].get("editable", False))
    vcs = data.get("vcs_info")
    if isinstance(vcs, dict):
        for k in ("vcs", "commit_id", "requested_revision"):
            if isinstance(vcs.get(k), str):
                out[f"vcs_{k}"] = strip_url_credentials(vcs[k])
    archive = data.get("archive_info")
    if isinstance(archive, dict):
        if isinstance(archive.get("hash"), str):
            out["archive_hash"] = archive["hash"]
        hashes = archive.get("hashes")
        if isinstance(hashes, dict):
            for algo, value in sorted(hashes.items()):
                out[f"archive_{algo}"] = str(value)
    return out


def distributions(paths: list, warnings: list, keep_rows: dict | None = None) -> dict:
    """Every distribution on `paths`, keyed by normalised name; the first on the path wins."""
    packages: dict = {}
    for dist in metadata.distributions(path=paths):
        where = _dist_dir(dist)
        text = dist.read_text("METADATA") or dist.read_text("PKG-INFO")
        if not text:
            warnings.append(f"python: broken distribution at {where}: no METADATA, skipped")
            continue
        headers = _headers(text)
        if "Name" not in headers or "Version" not in headers:
            warnings.append(
                f"python: broken distribution at {where}: METADATA lacks Name or Version, skipped"
            )
            continue
        name = normalize_name(headers["Name"])
        location = str(where.parent) if where else ""
        if name in packages:
            packages[name].setdefault("shadowed", []).append(location)
            continue
        entry = {"name": headers["Name"], "version": headers["Version"], "location": location}
        installer = (dist.read_text("INSTALLER") or "").strip()
        if installer:
            entry["installer"] = installer
        direct = _direct_url(dist)
        if direct:
            entry["direct_url"] = direct
        record_bytes = None
        if where is not None and where.suffix == ".dist-info":
            try:
                record_bytes = (where / "RECORD").read_bytes()
            except OSError:
                warnings.append(f"python: {headers['Name']} has no readable RECORD")
        if record_bytes is not None:
            rows = _record_rows(record_bytes.decode("utf-8", "replace"))
            entry["record_sha256"] = "sha256:" + hashlib.sha256(record_bytes).hexdigest()
            entry["fingerprint"] = content_fingerprint(rows)
            if keep_rows is not None:
                keep_rows[name] = (location, rows)
        else:
            entry["fingerprint"] = NO_RECORD
        packages[name] = entry
    return packages


def _hash_file(path: str, algo: str) -> str | None:
    try:
        h = hashlib.new(algo)
        with open(path, "rb") as fh:
            while True:
                chunk = fh.read(1 << 20)
                if not chunk:
                    break
                h.update(chunk)
    except OSError:
        return None
    return base64.urlsafe_b64encode(h.digest()).rstrip(b"=").decode("ascii")


def verify_files(rows_by_package: dict, workers: int | None = None) -> tuple[dict, int]:
    """Re-hash every file that RECORD lists with a hash, in parallel threads.

    hashlib releases the GIL on large buffers, so threads scale on multi-core machines.
    Returns ({package: {"modified": [...], "missing": [...]}}, files checked).
    """
    jobs = []
    for name, (location, rows) in rows_by_package.items():
        for row in rows:
            if len(row) < 2 or "=" not in row[1]:
                continue
            algo, _, expected = row[1].partition("=")
            jobs.append(
                (name, os.path.normpath(os.path.join(location, row[0])), row[0], algo, expected)
            )
    from concurrent.futures import ThreadPoolExecutor  # only needed with --verify-files

    workers = workers or min(32, (os.cpu_count() or 1) * 4)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        actual = list(pool.map(lambda job: _hash_file(job[1], job[3]), jobs, chunksize=64))
    problems: dict = {}
    for (name, _full, rel, _algo, expected), got in zip(jobs, actual):  # noqa: B905 (py3.8)
        if got == expected:
            continue
        kind = "missing" if got is None else "modified"
        problems.setdefault(name, {}).setdefault(kind, []).append(rel)
    for entry in problems.values():
        for files in entry.values():
            files.sort()
    return problems, len(jobs)


def collect(paths: list | None = None, verify: bool = False) -> dict:
    """The `python` section plus `warnings` and collector stats, as plain JSON data."""
    warnings: list = []
    paths = list(sys.path if paths is None else paths)
    rows: dict | None = {} if verify else None
    packages = distributions(paths, warnings, keep_rows=rows)
    section = interpreter()
    section["sys_path"] = [strip_url_credentials(p) for p in paths if p]
    stats = {"packages": len(packages)}
    if verify and rows is not None:
        problems, checked = verify_files(rows)
        stats["files_verified"] = checked
        for name, entry in problems.items():
            for kind, files in entry.items():
                packages[name][f"{kind}_files"] = files
                warnings.append(f"python: {name}: {len(files)} {kind} file(s) differ from RECORD")
    for entry in packages.values():
        entry.pop("name", None)
    section["packages"] = packages
    return {"section": section, "warnings": warnings, "stats": stats}


def main(paths: list | None = None, verify: bool = False) -> None:
    """Entry point inside a foreign interpreter: print the result as JSON on stdout."""
    sys.stdout.write(json.dumps(collect(paths, verify)))


if __name__ == "__main__":
    main(verify="--verify-files" in sys.argv)
