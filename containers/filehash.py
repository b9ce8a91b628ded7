"""Per-file digests taken while a layer streams past: what file verification compares.

Which digests a file gets is decided by its path, and by the layers before it, never by who
claims it (a package's RECORD or md5sums may come later in the same layer, or in a later
one):

- sha256, always: Python RECORD rows and conda's `paths.json` use it;
- md5 and sha1 as well, unless the file lies in a `site-packages`/`dist-packages` tree
  outside `usr/` (Debian's and Alpine's own Python packages live under usr/): dpkg's
  `md5sums` use md5, apk's `Z:` checksums sha1, and neither installs into virtual
  environments or conda prefixes. Which of the two is decided per layer (`MemberDigester.md5`,
  `.sha1`): the scan narrows them to the image's package database once a layer has shown
  it (dpkg's status: md5; apk's installed: sha1), so only the layers before it pay both.

A digest is raw bytes (32 + 16 or 20), so the table for 100k+ files stays a few tens of MB.
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
    sha1: bytes | None = None


class _Body(Protocol):
    def feed(self, sink) -> None: ...


def system_file(path: str) -> bool:
    if path.startswith("usr/"):
        return True
    return not any(tree in path for tree in _PY_TREES)


def digest_bytes(layer: int, path: str, data: bytes, md5: bool = True,
                 sha1: bool = False) -> FileDigest:
    system = system_file(path)
    return FileDigest(
        layer, len(data), hashlib.sha256(data).digest(),
        hashlib.md5(data).digest() if md5 and system else None,
        hashlib.sha1(data).digest() if sha1 and system else None,
    )


def digest_body(layer: int, path: str, size: int, body: _Body, md5: bool = True,
                sha1: bool = False) -> FileDigest:
    """Hash a member's body as it streams (one chunk in memory at a time)."""
    system = system_file(path)
    hashes = [hashlib.sha256()]
    hashes += [hashlib.md5()] if md5 and system else []
    hashes += [hashlib.sha1()] if sha1 and system else []
    if len(hashes) == 1:
        body.feed(hashes[0].update)
        return FileDigest(layer, size, hashes[0].digest(), None)
    updates = [h.update for h in hashes]

    def every(data: bytes) -> None:
        for update in updates:
            update(data)

    body.feed(every)
    return _digest(layer, size, hashes, md5 and system, sha1 and system)


def _digest(layer: int, size: int, hashes: list, md5: bool, sha1: bool) -> FileDigest:
    """The FileDigest of [sha256, md5 if md5, sha1 if sha1] hash objects."""
    return FileDigest(layer, size, hashes[0].digest(), hashes[1].digest() if md5 else None,
                      hashes[-1].digest() if sha1 else None)


class MemberDigester:
    """Hashes large file bodies on a worker thread, small ones inline.

    hashlib releases the GIL on large buffers, so a big file's sha256 and md5 run beside the
    decompression and tar parsing of what follows. Small files are hashed inline: a queue
    round trip would cost more than the hash. The queue is bounded (a few chunks).
    """

    INLINE = 256 << 10

    def __init__(self, depth: int = 16) -> None:
        # beside sha256, for system files: dpkg's md5, apk's sha1 (see the module docstring)
        self.md5 = True
        self.sha1 = True
        self._queue: queue.Queue = queue.Queue(maxsize=depth)
        self._results: dict[int, FileDigest] = {}
        self._next = 0
        self._thread = threading.Thread(target=self._run, name="prov-files", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        get, results = self._queue.get, self._results
        hashes: list = []
        begun: tuple = ()
        while True:
            item = get()
            if item is None:
                return
            if type(item) is not tuple:
                for h in hashes:
                    h.update(item)
            elif item[0] == "begin":
                begun = item
                hashes = [hashlib.sha256()]
                hashes += [hashlib.md5()] if item[4] else []
                hashes += [hashlib.sha1()] if item[5] else []
            elif item[0] == "end":
                fid, layer, size, md5, sha1 = begun[1:6]
                results[fid] = _digest(layer, size, hashes, md5, sha1)
            else:  # "sync": everything queued before it is done
                item[1].set()

    def digest_body(self, layer: int, path: str, size: int, body: _Body) -> FileDigest | int:
        """The digest (small files) or a ticket that `settle` turns into one."""
        if size < self.INLINE:
            return digest_body(layer, path, size, body, self.md5, self.sha1)
        fid = self._next
        self._next += 1
        put = self._queue.put
        system = system_file(path)
        put(("begin", fid, layer, size, self.md5 and system, self.sha1 and system))
        body.feed(put)
        put(("end",))
        return fid

    def narrow(self, databases: set[str]) -> None:
        """Take from the next layer on only what the image's package databases (`dpkg`,
        `apk`: those the layers so far hold) check; none yet: both."""
        if databases:
            self.md5, self.sha1 = "dpkg" in databases, "apk" in databases

    def digest_bytes(self, layer: int, path: str, data: bytes) -> FileDigest:
        """A file read whole (a cataloger kept it), with this layer's algorithms."""
        return digest_bytes(layer, path, data, self.md5, self.sha1)

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
