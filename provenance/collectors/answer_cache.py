"""Answers kept until anything they were read from changes: the python collector's (a
`--python` child's, or the running interpreter's) and the host's dpkg parse.

Starting the inspected interpreter and walking its sys.path is the largest part of a warm
`prov snapshot --python PATH` (~30 ms of CPU on a 26-package venv, besides prov's own start).
The collector's answer is a function of what it read and of what decided its sys.path, so
the collector stamps all of that (`stamps`) and a later run reuses the answer when every
stamp is unchanged (`lookup`, `load`), without starting the interpreter at all:
- each metadata directory on sys.path and the files the collector reads in it (METADATA,
  PKG-INFO, RECORD, INSTALLER, direct_url.json; an `.egg-info` file is its own PKG-INFO);
- each sys.path directory (installing, upgrading or removing a distribution adds, renames or
  removes an entry in it, which changes its mtime and ctime) and the `.pth` files in it;
- what decides sys.path besides those: sitecustomize/usercustomize, the user site directory
  and pyvenv.cfg (stamped absent too: their creation changes sys.path), the interpreter
  (its directory, its binary and libpython);
  the environment (PYTHON* variables, HOME, LD_LIBRARY_PATH, LD_PRELOAD, the cwd when
  PYTHONPATH holds a relative entry) goes into the cache key;
- prov's own collector code (every prov module the child loaded).
A stamp is (st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns); ctime cannot be set back, so
an edit that restores an mtime is still seen. An answer is kept only when every stamp is older
than two seconds before the collection started (git's "racily clean" rule: a change during
the reads could otherwise leave a stamp that matches stale content, and timestamps are coarse).
Not covered: a sys.path computed by code in a `.pth` file or sitecustomize from some other
input; `--verify-files` never uses the cache (it must re-hash every file).

Standard library only and Python 3.8-compatible: `stamps` runs inside the inspected
interpreter; the rest runs in prov before its other imports.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys

VERSION = 1
RACY_NS = 2_000_000_000
_KEY_ENV = ("HOME", "LD_LIBRARY_PATH", "LD_PRELOAD")
_DIST_FILES = ("METADATA", "PKG-INFO", "RECORD", "INSTALLER", "direct_url.json")
_PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def cache_root() -> str:
    """prov's cache directory: $PROV_CACHE_DIR, else $XDG_CACHE_HOME/prov or ~/.cache/prov."""
    return os.environ.get("PROV_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "prov"
    )


def stamp(path: str) -> list | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def stamps(paths: list, metadata_dirs: list) -> dict:
    """Inside the inspected interpreter: the stamp of everything its answer depends on."""
    import site
    import sysconfig

    # the interpreter's directory too: re-pointing a venv's `python` symlink changes it
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
    for where in metadata_dirs:
        wanted.append(str(where))
        wanted += [os.path.join(str(where), name) for name in _DIST_FILES]
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None) or ""
        if name in ("sitecustomize", "usercustomize") or file.startswith(_PROJECT_ROOT):
            wanted.append(file)
    return {path: stamp(path) for path in wanted if path}


def key_material(python: str) -> list:
    """What the cache key holds besides the stamps: the interpreter as named, the variables
    that steer its start-up, and the cwd when a relative PYTHONPATH entry depends on it."""
    env = sorted((k, v) for k, v in os.environ.items()
                 if k.startswith(("PYTHON", "_PYTHON")) or k in _KEY_ENV)
    relative = any(p and not os.path.isabs(p)
                   for p in os.environ.get("PYTHONPATH", "").split(os.pathsep))
    return [VERSION, os.path.abspath(python), env, os.getcwd() if relative else None]


def entry_path(name: str, material: object) -> str:
    """The cache file for `material` (JSON-able) under a readable `name` prefix."""
    import hashlib

    key = hashlib.sha256(json.dumps(material).encode()).hexdigest()[:32]
    return os.path.join(cache_root(), "snapshots", f"{name}-{key}.json")


def read_value(path: str):
    """The value of the entry at `path` with the stamps it was saved with, or None."""
    try:
        with open(path, encoding="utf-8") as fh:
            entry = json.load(fh)
        deps, value = entry["deps"], entry["value"]
    except (OSError, ValueError, KeyError, TypeError):
        return None  # absent or damaged: computed afresh
    if entry.get("version") != VERSION or not isinstance(deps, dict):
        return None
    return deps, value


def write_value(path: str, value: object, deps: dict | None = None) -> None:
    """Temp file and rename, without fsync: a torn entry after a crash is not valid JSON, so
    it is a miss, never a wrong answer."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump({"version": VERSION, "deps": deps or {}, "value": value}, fh)
        os.replace(tmp, path)
    except OSError:  # an unwritable cache only costs speed
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def load(path: str):
    """The value kept at `path` when every stamp it was saved with still holds, else None."""
    got = read_value(path)
    if got is None or not got[0]:
        return None
    deps, value = got
    for dep, recorded in deps.items():
        if stamp(dep) != recorded:
            return None
    return value


def save(path: str, value: object, deps: dict, started_ns: int) -> None:
    """Keep `value` with its stamps unless one is racy (changed since two seconds before
    `started_ns`, when its computation began)."""
    newest = started_ns - RACY_NS
    if not deps or any(s is not None and (s[3] >= newest or s[4] >= newest)
                       for s in deps.values()):
        return
    write_value(path, value, deps)


def lookup(python: str) -> dict | None:
    """The collector child's earlier answer for interpreter `python`, if still valid."""
    return load(entry_path("python", key_material(python)))


def keep(python: str, result: dict, deps: dict, started_ns: int) -> None:
    save(entry_path("python", key_material(python)), result, deps, started_ns)
