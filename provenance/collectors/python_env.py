"""The Python collector: the interpreter and every installed distribution on sys.path.

Standard library only, and Python 3.8-compatible, because `prov snapshot --python PATH` runs
this module inside the interpreter being inspected (`python -c ... main()`), which need not
have prov's dependencies. Versions come from the installed metadata, found on sys.path as
importlib.metadata (and so `pip list`) finds it, never from import-time `__version__` strings.
"""

from __future__ import annotations

import contextlib
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
from provenance.collectors import stamped

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


def fingerprint_table(paths: list, use_cache: bool = True) -> stamped.StampedTable:
    """RECORD's facts (record_sha256, fingerprint) of each distribution, kept by the RECORD
    file's stamp (both are functions of RECORD's bytes alone), one table per interpreter and
    sys.path, valid while the code computing them is unchanged. `--verify-files` never uses
    it: it needs the rows and re-hashes every file anyway."""
    if not use_cache:
        return stamped.StampedTable(None)
    name = "fingerprints-" + hashlib.sha256(json.dumps(
        [sys.executable, sys.prefix, sys.version, paths]).encode()).hexdigest()[:24] + ".json"
    code = [__file__, sys.modules[content_fingerprint.__module__].__file__ or ""]
    return stamped.StampedTable(os.path.join(stamped.cache_root(), "snapshots", name), code)


def _record_facts(where: Path, keep: bool, table: stamped.StampedTable | None,
                  warnings: list, label: str):
    """(facts, rows): RECORD's sha256 and fingerprint, from the table when still valid;
    rows only when `keep` (for --verify-files). (None, None) without a readable RECORD."""
    record = str(where / "RECORD")
    started_ns, recorded = time.time_ns(), stamped.stamp(record)
    if table is not None and not keep:
        hit = table.get(record, recorded)
        if isinstance(hit, dict):
            return hit, None
    try:
        with open(record, "rb") as fh:
            data = fh.read()
    except OSError:
        warnings.append(f"python: {label} has no readable RECORD")
        return None, None
    rows = _record_rows(data.decode("utf-8", "replace"))
    facts = {
        "record_sha256": "sha256:" + hashlib.sha256(data).hexdigest(),
        "fingerprint": content_fingerprint(rows),
    }
    if table is not None:
        table.put(record, recorded, facts, started_ns)
    return facts, rows if keep else None


def distributions(paths: list, warnings: list, keep_rows: dict | None = None,
                  table: stamped.StampedTable | None = None) -> dict:
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
            facts, rows = _record_facts(where, keep, table, warnings, headers["Name"])
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
    table = fingerprint_table(paths, use_cache)
    packages = distributions(paths, warnings, keep_rows=rows, table=table)
    table.save(prune=True)  # rows of distributions no longer installed are dropped
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


_KEY_ENV = ("HOME", "LD_LIBRARY_PATH", "LD_PRELOAD")
_DIST_FILES = ("METADATA", "PKG-INFO", "RECORD", "INSTALLER", "direct_url.json")
_PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def answer_deps(paths: list) -> dict:
    """Inside the inspected interpreter, after collecting: the stamps of everything the
    answer depends on (`stamped`), so a later snapshot can reuse it without starting it:
    - each metadata directory on sys.path and the files read in it (METADATA, PKG-INFO,
      RECORD, INSTALLER, direct_url.json; an `.egg-info` file is its own PKG-INFO);
    - each sys.path directory (an install, upgrade or removal adds, renames or removes an
      entry in it) and the `.pth` files in it;
    - what decides sys.path besides: sitecustomize/usercustomize, the user site directory
      and pyvenv.cfg (stamped absent too: creating them changes sys.path), the interpreter
      (its directory: re-pointing a venv's `python` link changes it; its binary, libpython);
    - prov's own code the interpreter loaded.
    Not covered: a sys.path computed by code in a `.pth` file or sitecustomize from some
    other input. The environment that steers start-up is the key's (`answer_key`)."""
    import site

    wanted = [sys.executable, os.path.dirname(sys.executable), os.path.realpath(sys.executable),
              os.path.join(sys.prefix, "pyvenv.cfg")]
    libdir, soname = sysconfig.get_config_var("LIBDIR"), sysconfig.get_config_var("INSTSONAME")
    if libdir and soname:
        wanted.append(os.path.join(libdir, soname))
    if getattr(site, "USER_SITE", None):
        wanted.append(site.USER_SITE)
    for entry in paths:
        wanted.append(entry)
        with contextlib.suppress(OSError):
            wanted += [os.path.join(entry, n) for n in os.listdir(entry) if n.endswith(".pth")]
    for where in metadata_dirs(paths):
        wanted.append(str(where))
        wanted += [os.path.join(str(where), name) for name in _DIST_FILES]
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None) or ""
        if name in ("sitecustomize", "usercustomize") or file.startswith(_PROJECT_ROOT):
            wanted.append(file)
    return stamped.stamps(wanted)


def answer_key(python: str, paths: list | None = None) -> str:
    """The entry of the collector's answer for interpreter `python` (`paths`: its sys.path,
    when collected in this process): the interpreter as named, the variables that steer its
    start-up, and the cwd when a relative PYTHONPATH entry depends on it."""
    env = sorted((k, v) for k, v in os.environ.items()
                 if k.startswith(("PYTHON", "_PYTHON")) or k in _KEY_ENV)
    relative = any(p and not os.path.isabs(p)
                   for p in os.environ.get("PYTHONPATH", "").split(os.pathsep))
    material = [os.path.abspath(python), env, os.getcwd() if relative else None, paths]
    return stamped.entry_path("python" if paths is None else "python-here", material)


def main(paths: list | None = None, verify: bool = False, progress: bool = False) -> None:
    """Entry point inside a foreign interpreter: print the result as JSON on stdout, with
    the stamps of what it depends on (`answer_deps`) unless it re-hashed files; with
    `progress`, re-hashing reports on stderr (`progress_to_stderr`)."""
    result = collect(paths, verify, progress=progress_to_stderr() if progress else None)
    if not verify:
        result["deps"] = answer_deps(list(paths if paths is not None else sys.path))
    sys.stdout.write(json.dumps(result))


if __name__ == "__main__":
    main(verify="--verify-files" in sys.argv)
