"""Which shared libraries a workload really loaded, from `/proc/<pid>/maps`.

torch's collect_env guesses CUDA/cuDNN versions from PATH and ldconfig; the maps of the
running process are the truth: the exact files mapped, whichever directory they came from.
The workload and all its descendants are sampled on a backing-off schedule (dense at start,
when libraries load, then every couple of seconds), so a long run costs almost nothing.
Files are hashed once the workload has ended, through a cache kept by each file's stamp
(`FileDigestCache`), so a multi-GB libtorch_cuda is hashed once per install.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from provenance.collectors import stamped
from provenance.exec.jit import identify
from provenance.exec.probe.libs import jit_artifact
from provenance.model.digests import file_sha256_size

_SHARED = re.compile(rb"\.so(\.[0-9.]+)?$")
# Seconds between samples: dense while libraries load, then sparse.
SCHEDULE = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0)
MAX_INTERVAL = 2.0


def descendants(root: int) -> list[int]:
    """`root` and every live descendant, through /proc/<pid>/task/<tid>/children."""
    out: list[int] = []
    todo = [root]
    seen: set[int] = set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        out.append(pid)
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                with open(f"/proc/{pid}/task/{tid}/children", "rb") as fh:
                    todo.extend(int(c) for c in fh.read().split())
            except OSError:
                continue
    return out


def parse_maps(data: bytes) -> set[str]:
    """Paths of file-backed shared objects in a maps file (deleted ones keep their marker)."""
    found: set[bytes] = set()
    for line in data.split(b"\n"):
        slash = line.find(b"/")
        if slash < 0:
            continue
        path = line[slash:]
        bare = path[: -len(b" (deleted)")] if path.endswith(b" (deleted)") else path
        if _SHARED.search(bare) or b".so." in bare.rsplit(b"/", 1)[-1]:
            found.add(path)
    return {p.decode("utf-8", "surrogateescape") for p in found}


class LibrarySampler:
    """Accumulates the shared objects mapped by a process tree over its lifetime."""

    def __init__(self, root_pid: int) -> None:
        self.root = root_pid
        self.paths: dict[str, set[int]] = {}
        self.samples = 0
        self._step = 0

    def next_interval(self) -> float:
        if self._step < len(SCHEDULE):
            return SCHEDULE[self._step]
        return MAX_INTERVAL

    def sample(self) -> None:
        self._step += 1
        self.samples += 1
        for pid in descendants(self.root):
            try:
                with open(f"/proc/{pid}/maps", "rb") as fh:
                    data = fh.read()
            except OSError:
                continue
            for path in parse_maps(data):
                self.paths.setdefault(path, set()).add(pid)

    def add_paths(self, maps: dict[int, list[str]]) -> None:
        """Mapped files seen another way (the in-process probe's maps at exit), per pid."""
        for pid, paths in maps.items():
            for path in paths:
                self.paths.setdefault(path, set()).add(pid)

    def results(self, hasher: FileDigestCache | None = None, env: Mapping[str, str] | None = None,
                versions: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
        """One entry per mapped file: path, name, size, sha256, and for a file a JIT
        compiled (`jit.identify`, with the run's `env` and compiler `versions`) its `jit`.
        A `hasher` passed in is its owner's to save."""
        own = hasher is None
        hasher = hasher or FileDigestCache()
        env = os.environ if env is None else env
        out = []
        for path in sorted(self.paths):
            entry: dict[str, Any] = {"path": path, "name": path.rsplit("/", 1)[-1]}
            if path.endswith(" (deleted)"):
                entry["name"] = entry["name"][: -len(" (deleted)")]
                entry["sha256"] = "unavailable: file deleted while mapped"
            else:
                size, digest = hasher.hash(path)
                if size is not None:
                    entry["size"] = size
                entry["sha256"] = digest
            try:
                fact = identify(path.removesuffix(" (deleted)"), env, versions)
            except (OSError, ValueError):  # never fails the run: compared by bytes
                fact = None
            if fact:
                entry["jit"] = fact
            elif jit_artifact(path):  # a compiler's output in a cache the JIT table does not
                # know (vLLM's torch_compile_cache): rebuilt per run, its inputs are identity
                entry["sha256"] = "not compared: compiled during the run"
            out.append(entry)
        if own:
            hasher.save()
        return out


class FileDigestCache:
    """The sha256 of files on disk, kept by each file's stamp across runs
    (`provenance.collectors.stamped`: device, inode, size, mtime, ctime; a file changed
    within the racy window is hashed again next time). `cache`: the table's file."""

    def __init__(self, cache: Path | None = None) -> None:
        path = cache or Path(stamped.cache_root()) / "file-digests.json"
        self.table = stamped.StampedTable(str(path))

    def cached(self, path: str) -> bool:
        """True when `path`'s digest would come from the cache."""
        return self.table.get(path, stamped.stamp(path)) is not None

    def hash(self, path: str) -> tuple[int | None, str]:
        """(size, `sha256:<hex>`) of the file at `path`; an unreadable one is
        (size or None, `unavailable: <reason>`)."""
        started_ns = time.time_ns()
        try:
            recorded = stamped.stamp_of(os.stat(path))
        except OSError as exc:
            return None, f"unavailable: {exc.strerror}"
        kept = self.table.get(path, recorded)
        if isinstance(kept, str):
            return recorded[2], kept
        try:
            digest, size = file_sha256_size(path)
        except OSError as exc:
            return recorded[2], f"unavailable: {exc.strerror}"
        self.table.put(path, recorded, digest, started_ns)
        return size, digest

    def save(self) -> None:
        """Write the table if a digest was added, less the rows of files gone since: runs
        read files in ever-new directories, and a table that only grows is read in full
        by every run."""
        if self.table.dirty:
            self.table.drop(lambda path: not os.path.lexists(path))
        self.table.save()
