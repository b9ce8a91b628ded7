"""sha256 in a background thread: hashing overlaps decompression and tar parsing.

hashlib releases the GIL on large buffers, so on two cores the digest of a 1 MiB chunk is
computed while the main thread inflates and parses the next one. The queue is bounded, so
at most a few chunks are held in memory.
"""

from __future__ import annotations

import hashlib
import queue
import threading

_DONE = object()


class BackgroundHash:
    def __init__(self, depth: int = 8) -> None:
        self._hash = hashlib.sha256()
        self._queue: queue.Queue = queue.Queue(maxsize=depth)
        self._thread = threading.Thread(target=self._run, name="prov-sha256", daemon=True)
        self._thread.start()
        self._digest: str | None = None

    def _run(self) -> None:
        update = self._hash.update
        get = self._queue.get
        while True:
            item = get()
            if item is _DONE:
                return
            update(item)

    def update(self, data: bytes) -> None:
        self._queue.put(data)

    def hexdigest(self) -> str:
        if self._digest is None:
            self._queue.put(_DONE)
            self._thread.join()
            self._digest = self._hash.hexdigest()
        return self._digest

    def close(self) -> None:
        """Stop the thread without a digest (the stream was abandoned)."""
        if self._digest is None and self._thread.is_alive():
            self._queue.put(_DONE)
            self._thread.join()
            self._digest = ""
