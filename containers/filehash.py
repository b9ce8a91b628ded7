"""Per-file digests taken while a layer streams past: what file verification compares.

Which digests a file gets is decided by its path alone, before anyone knows who claims it
(a package's RECORD or md5sums may come later in the same layer, or in a later one):

- sha256, always: Python RECORD rows and conda's `paths.json` use it;
- md5 as well, unless the file lies in a `site-packages`/`dist-packages` tree outside
  `usr/` (Debian's own Python packages live under usr/): dpkg's `md5sums` use md5, and
  dpkg does not install into virtual environments or conda prefixes.

A digest is raw bytes (32 + 16), so the table for 100k+ files stays a few tens of MB.
"""

from __future__ import annotations

import hashlib
import queue
import threading
from typing import NamedTuple, Protocol

_PY_TREES = ("/site-packages/", "/dist-packages/")


class FileDigest(NamedTuple):
    layer: int  # the layer that last wrote the file
    size: int
    sha256: bytes
    md5: bytes | None  # None: not taken (see the module docstring)


class _Body(Protocol):
    def feed(self, sink) -> None: ...


def wants_md5(path: str) -> bool:
    if path.startswith("usr/"):
        return True
    return not any(tree in path for tree in _PY_TREES)


def digest_bytes(layer: int, path: str, data: bytes) -> FileDigest:
    md5 = hashlib.md5(data).digest() if wants_md5(path) else None
    return FileDigest(layer, len(data), hashlib.sha256(data).digest(), md5)


def digest_body(layer: int, path: str, size: int, body: _Body) -> FileDigest:
    """Hash a member's body as it streams (one chunk in memory at a time)."""
    sha = hashlib.sha256()
    if not wants_md5(path):
        body.feed(sha.update)
        return FileDigest(layer, size, sha.digest(), None)
    md5 = hashlib.md5()
    update_sha, update_md5 = sha.update, md5.update

    def both(data: bytes) -> None:
        update_sha(data)
        update_md5(data)

    body.feed(both)
    return FileDigest(layer, size, sha.digest(), md5.digest())


class FileHasher:
    """Hashes large file bodies on a worker thread, small ones inline.

    hashlib releases the GIL on large buffers, so a big file's sha256 and md5 run beside the
    decompression and tar parsing of what follows. Small files are hashed inline: a queue
    round trip would cost more than the hash. The queue is bounded (a few chunks).
    """

    INLINE = 256 << 10

    def __init__(self, depth: int = 16) -> None:
        self._queue: queue.Queue = queue.Queue(maxsize=depth)
        self._results: dict[int, FileDigest] = {}
        self._next = 0
        self._thread = threading.Thread(target=self._run, name="prov-files", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        get, results = self._queue.get, self._results
        sha = md5 = None
        begun: tuple = ()
        while True:
            item = get()
            if item is None:
                return
            if type(item) is not tuple:
                sha.update(item)
                if md5 is not None:
                    md5.update(item)
            elif item[0] == "begin":
                begun = item
                sha, md5 = hashlib.sha256(), hashlib.md5() if item[4] else None
            elif item[0] == "end":
                fid, layer, size = begun[1:4]
                results[fid] = FileDigest(layer, size, sha.digest(), md5 and md5.digest())
            else:  # "sync": everything queued before it is done
                item[1].set()

    def digest_body(self, layer: int, path: str, size: int, body: _Body) -> FileDigest | int:
        """The digest (small files) or a ticket that `settle` turns into one."""
        if size < self.INLINE:
            return digest_body(layer, path, size, body)
        fid = self._next
        self._next += 1
        put = self._queue.put
        put(("begin", fid, layer, size, wants_md5(path)))
        body.feed(put)
        put(("end",))
        return fid

    def settle(self, hashed: dict[str, FileDigest | int]) -> None:
        """Wait for the queued bodies; replace every ticket in `hashed` by its digest."""
        if not any(type(v) is int for v in hashed.values()):
            return
        done = threading.Event()
        self._queue.put(("sync", done))
        done.wait()
        for path, value in hashed.items():
            if type(value) is int:
                hashed[path] = self._results[value]
        self._results.clear()

    def close(self) -> None:
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()
