"""The Python collector: the interpreter and every installed distribution on sys.path.

Standard library only, and Python 3.8-compatible, because `prov snapshot --python PATH` runs
this module inside the interpreter being inspected (`python -c ... main()`), which need not
have prov's dependencies. Versions come from the installed metadata, found on sys.path as
importlib.metadata (and so `pip list`) finds it, never from import-time `__version__` strings.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
import sysconfig
import time
from pathlib import Path
from typing import TYPE_CHECKING

from containers.catalogers import (
    NO_RECORD,
    checked_rows,
    content_fingerprint,
    normalize_name,
    record_digest,
)
from containers.catalogers import headers as _headers
from containers.catalogers import record_rows as _record_rows

if TYPE_CHECKING:  # typing only: this module runs in interpreters without prov's dependencies
    from provenance.model.sections import Interpreter


def strip_url_credentials(text: str) -> str:
    """prov's redaction of URL credentials, imported only for text that could hold one
    (userinfo needs `@`, a secret query parameter `=`): most sys.path entries cannot."""
    if "@" not in text and "=" not in text:
        return text
    from provenance.model.redact import strip_url_credentials as strip

    return strip(text)


def interpreter() -> Interpreter:
    build_no, build_date = platform.python_build()
    facts: Interpreter = {
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


def metadata_dirs(paths: list):
    """Each `*.dist-info` / `*.egg-info` (and an `.egg`'s EGG-INFO) on `paths`, in the order
    importlib.metadata's path finder yields them, without importing importlib.metadata
    (it pulls in email, zipfile and csv: tens of ms in every foreign interpreter).
    Zip archives on sys.path are not searched (no installer puts distributions there)."""
    for entry in paths:
        try:
            with os.scandir(entry) as it:
                children = [child.name for child in it]
        except OSError:  # missing, not a directory, or a zip archive
            continue
        is_egg = entry.endswith(".egg")
        for child in children:
            low = child.lower()
            if low.endswith((".dist-info", ".egg-info")) or (is_egg and low == "egg-info"):
                yield Path(entry) / child


def _read_text(where: Path, name: str) -> str | None:
    """A metadata file of a distribution; an `.egg-info` that is a file is its own PKG-INFO."""
    target = where / name if name else where
    try:
        with open(target, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:  # absent, a directory, unreadable: as importlib.metadata's read_text
        return None


def _direct_url(where: Path) -> dict | None:
    text = _read_text(where, "direct_url.json")
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


class FingerprintCache:
    """RECORD facts (record_sha256, fingerprint) of each distribution, keyed by the RECORD
    file's (st_dev, st_ino, st_size, st_mtime_ns): both facts are functions of RECORD's bytes
    alone, and any installer that rewrites RECORD changes that stat. Kept beside the snapshot
    cache, one file per interpreter, sys.path and collector code version. A RECORD modified
    within the last two seconds is not cached (its mtime could repeat after an edit: git's
    "racily clean").
    `--verify-files` never uses it: it needs the rows and re-hashes every file anyway.
    """

    RACY_NS = 2_000_000_000
    VERSION = 1

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.entries: dict = {}
        self.seen: set = set()  # entries of distributions still installed: the ones kept
        self.changed = False
        if path is not None:
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                if isinstance(data, dict) and data.get("version") == self.VERSION:
                    self.entries = data.get("entries", {})
            except (OSError, ValueError):
                pass

    @staticmethod
    def default_path(paths: list) -> Path:
        from provenance.collectors.answer_cache import cache_root

        base = cache_root()
        code = [_stamp(__file__), _stamp(_python_dist_file())]
        key = json.dumps([sys.executable, sys.prefix, sys.version, code, paths])
        name = "fingerprints-" + hashlib.sha256(key.encode()).hexdigest()[:24] + ".json"
        return Path(base) / "snapshots" / name

    def get(self, record: Path, st: os.stat_result) -> dict | None:
        self.seen.add(str(record))
        hit = self.entries.get(str(record))
        if hit and hit[0] == [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]:
            return {"record_sha256": hit[1], "fingerprint": hit[2]}
        return None

    def put(self, record: Path, st: os.stat_result, facts: dict) -> None:
        self.seen.add(str(record))
        if st.st_mtime_ns > time.time_ns() - self.RACY_NS:
            return
        stamp = [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]
        self.entries[str(record)] = [stamp, facts["record_sha256"], facts["fingerprint"]]
        self.changed = True

    def save(self) -> None:
        gone = set(self.entries) - self.seen
        for key in gone:
            del self.entries[key]
        if not (self.changed or gone) or self.path is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"version": self.VERSION, "entries": self.entries}))
            os.replace(str(tmp), str(self.path))
        except OSError:
            pass  # an unwritable cache only costs speed


def _stamp(path: str) -> list:
    try:
        st = os.stat(path)
    except OSError:
        return []
    return [st.st_mtime_ns, st.st_size]


def _python_dist_file() -> str:
    """The fingerprint code's own file (its changes invalidate the cache)."""
    return sys.modules[content_fingerprint.__module__].__file__ or ""


def _record_facts(where: Path, keep: bool, cache: FingerprintCache | None, warnings: list,
                  label: str):
    """(facts, rows): RECORD's sha256 and fingerprint, from the cache when still valid;
    rows only when `keep` (for --verify-files). (None, None) without a readable RECORD."""
    record = where / "RECORD"
    try:
        st = record.stat()
    except OSError:
        warnings.append(f"python: {label} has no readable RECORD")
        return None, None
    if cache is not None and not keep:
        hit = cache.get(record, st)
        if hit is not None:
            return hit, None
    try:
        data = record.read_bytes()
    except OSError:
        warnings.append(f"python: {label} has no readable RECORD")
        return None, None
    rows = _record_rows(data.decode("utf-8", "replace"))
    facts = {
        "record_sha256": "sha256:" + hashlib.sha256(data).hexdigest(),
        "fingerprint": content_fingerprint(rows),
    }
    if cache is not None:
        cache.put(record, st, facts)
    return facts, rows if keep else None


def distributions(paths: list, warnings: list, keep_rows: dict | None = None,
                  cache: FingerprintCache | None = None) -> dict:
    """Every distribution on `paths`, keyed by normalised name; the first on the path wins."""
    packages: dict = {}
    for where in metadata_dirs(paths):
        text = (_read_text(where, "METADATA") or _read_text(where, "PKG-INFO")
                or _read_text(where, ""))
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
        location = str(where.parent)
        if name in packages:
            packages[name].setdefault("shadowed", []).append(location)
            continue
        entry = {"name": headers["Name"], "version": headers["Version"], "location": location}
        installer = (_read_text(where, "INSTALLER") or "").strip()
        if installer:
            entry["installer"] = installer
        direct = _direct_url(where)
        if direct:
            entry["direct_url"] = direct
        facts = rows = None
        if where.suffix == ".dist-info":
            keep = keep_rows is not None
            facts, rows = _record_facts(where, keep, cache, warnings, headers["Name"])
        if facts is not None:
            entry.update(facts)
            if keep_rows is not None:
                keep_rows[name] = (location, rows)
        else:
            entry["fingerprint"] = NO_RECORD
        packages[name] = entry
    return packages


def _hash_file(path: str, algo: str) -> bytes | None:
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
    return h.digest()


def _counted(hash_file, total: int, progress):
    """`hash_file` that reports (done, total) to `progress` after each file (thread-safe)."""
    if progress is None:
        return hash_file
    import threading

    lock, done = threading.Lock(), [0]
    progress(0, total)

    def counted(path: str, algo: str):
        digest = hash_file(path, algo)
        with lock:
            done[0] += 1
            progress(done[0], total)
        return digest

    return counted


def progress_to_stderr():
    """Inside a foreign interpreter: (done, total) as `PROGRESS` lines on stderr, which
    `provenance.collectors.foreign` reads while the child runs; at most 10 a second."""
    last = [0.0]

    def report(done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and now - last[0] < 0.1:
            return
        last[0] = now
        sys.stderr.write(f"{PROGRESS}{done} {total}\n")
        sys.stderr.flush()

    return report


PROGRESS = "prov-progress: "


def verify_files(rows_by_package: dict, workers: int | None = None,
                 progress=None) -> tuple[dict, int]:
    """Re-hash every file that RECORD lists with a hash, in parallel threads.

    hashlib releases the GIL on large buffers, so threads scale on multi-core machines.
    `progress(done, total)`, if given, is called from the threads as files are hashed.
    Returns ({package: {"modified": [...], "missing": [...]}}, files checked).
    """
    jobs = []
    for name, (location, rows) in rows_by_package.items():
        for rel, digest in checked_rows(rows).items():  # the installers' rule for duplicates
            found = record_digest(digest)  # base64 or hex, as the installers read it
            if found is None:
                continue
            algo, expected = found
            jobs.append((name, os.path.normpath(os.path.join(location, rel)), rel, algo, expected))
    from concurrent.futures import ThreadPoolExecutor  # only needed with --verify-files

    workers = workers or min(32, (os.cpu_count() or 1) * 4)
    hash_one = _counted(_hash_file, len(jobs), progress)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        actual = list(pool.map(lambda job: hash_one(job[1], job[3]), jobs, chunksize=64))
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


def collect(paths: list | None = None, verify: bool = False, use_cache: bool = True,
            progress=None) -> dict:
    """The `python` section plus `warnings` and collector stats, as plain JSON data.
    `progress(done, total)`: called as `verify` re-hashes files."""
    warnings: list = []
    paths = list(sys.path if paths is None else paths)
    rows: dict | None = {} if verify else None
    cache = FingerprintCache(FingerprintCache.default_path(paths) if use_cache else None)
    packages = distributions(paths, warnings, keep_rows=rows, cache=cache)
    cache.save()
    section = interpreter()
    section["sys_path"] = [strip_url_credentials(p) for p in paths if p]
    stats = {"packages": len(packages)}
    if verify and rows is not None:
        problems, checked = verify_files(rows, progress=progress)
        stats["files_verified"] = checked
        for name, entry in problems.items():
            for kind, files in entry.items():
                packages[name][f"{kind}_files"] = files
                warnings.append(f"python: {name}: {len(files)} {kind} file(s) differ from RECORD")
    for entry in packages.values():
        entry.pop("name", None)
    section["packages"] = packages
    return {"section": section, "warnings": warnings, "stats": stats}


def main(paths: list | None = None, verify: bool = False, progress: bool = False) -> None:
    """Entry point inside a foreign interpreter: print the result as JSON on stdout, with
    the stamps of what it depends on (`answer_cache`) unless it re-hashed files; with
    `progress`, re-hashing reports on stderr (`progress_to_stderr`)."""
    result = collect(paths, verify, progress=progress_to_stderr() if progress else None)
    if not verify:
        from provenance.collectors.answer_cache import stamps

        where = list(paths if paths is not None else sys.path)
        result["deps"] = stamps(where, list(metadata_dirs(where)))
    sys.stdout.write(json.dumps(result))


if __name__ == "__main__":
    main(verify="--verify-files" in sys.argv)
