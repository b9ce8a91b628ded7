"""Sniff a layer's compression from its magic bytes and stream it out, hashing the result.

The uncompressed bytes hash to the layer's DiffID. A gzip or zstd bomb is refused by ratio
(the decompressed size may not exceed MAX_RATIO times the compressed bytes read so far,
past a floor), so memory and time stay bounded whatever the input.
"""

from __future__ import annotations

import zlib
from typing import Protocol

from containers.errors import ImageError
from containers.hashing import BackgroundHash

CHUNK = 1 << 20
MAX_RATIO = 250  # real layers compress far less; deflate tops out at ~1032:1
RATIO_FLOOR = 64 << 20  # small layers of zeros are legitimate

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


class Reader(Protocol):
    def read(self, n: int = -1) -> bytes: ...


class Decompressed:
    """A read(n)-able stream of a layer's tar bytes; `diff_id()` once fully read."""

    def __init__(self, raw: Reader, what: str) -> None:
        self._raw = raw
        self._what = what
        self._hash = BackgroundHash()
        self.compressed = 0
        self.out = 0
        head = self._raw_read(CHUNK)
        self._pending: list[bytes] = []
        self._eof = False
        if head.startswith(GZIP_MAGIC):
            self.compression = "gzip"
            self._inflate = zlib.decompressobj(wbits=31)
            self._gen = self._gzip(head)
        elif head.startswith(ZSTD_MAGIC):
            self.compression = "zstd"
            self._gen = self._zstd(head)
        else:
            self.compression = "none"
            self._gen = self._plain(head)
        # uncompressed from a verifying reader: the blob digest is the DiffID already
        self._hash_out = self.compression != "none" or not hasattr(raw, "verified_digest")

    def _raw_read(self, n: int) -> bytes:
        data = self._raw.read(n)
        self.compressed += len(data)
        return data

    def _check_ratio(self) -> None:
        if self.out > RATIO_FLOOR and self.out > MAX_RATIO * max(self.compressed, 1):
            raise ImageError(
                f"{self._what}: decompression bomb refused ({self.out} bytes out of "
                f"{self.compressed} compressed)"
            )

    def _plain(self, head: bytes):
        data = head
        while data:
            yield data
            data = self._raw_read(CHUNK)

    def _gzip(self, head: bytes):
        data = head
        inflate = self._inflate
        while True:
            if not data:
                data = self._raw_read(CHUNK)
                if not data:
                    if not inflate.eof:
                        raise ImageError(f"{self._what}: truncated gzip stream")
                    return
            try:
                out = inflate.decompress(data, CHUNK)
                while True:
                    if out:
                        yield out
                    if inflate.eof:
                        rest = inflate.unused_data
                        if rest.strip(b"\0"):
                            # concatenated gzip members: a new member follows
                            inflate = zlib.decompressobj(wbits=31)
                            data = rest
                            break
                        data = b""
                        # trailing zero padding after the last member is tolerated
                        while self._raw_read(CHUNK):
                            pass
                        return
                    if not inflate.unconsumed_tail:
                        data = b""
                        break
                    out = inflate.decompress(inflate.unconsumed_tail, CHUNK)
            except zlib.error as exc:
                raise ImageError(f"{self._what}: corrupt gzip stream: {exc}") from exc

    def _zstd(self, head: bytes):
        try:
            import zstandard
        except ImportError as exc:  # pragma: no cover - it is a dependency
            raise ImageError(f"{self._what}: zstd layer needs the 'zstandard' package") from exc
        outer = self

        class _Source:
            first = head

            def read(self, n: int = -1) -> bytes:
                if self.first:
                    data, self.first = self.first, b""
                    return data
                return outer._raw_read(n if n > 0 else CHUNK)

        # stream_reader caps each read's output, so a zstd bomb cannot balloon memory
        reader = zstandard.ZstdDecompressor().stream_reader(
            _Source(), read_size=CHUNK, read_across_frames=True
        )
        while True:
            try:
                out = reader.read(CHUNK)
            except zstandard.ZstdError as exc:
                msg = str(exc)
                kind = "truncated" if "incomplete" in msg or "premature" in msg else "corrupt"
                raise ImageError(f"{self._what}: {kind} zstd stream: {msg}") from exc
            if not out:
                return
            yield out

    def chunk(self) -> bytes:
        """The next piece of uncompressed bytes; b'' at the end."""
        if self._eof:
            return b""
        try:
            out = next(self._gen)
        except StopIteration:
            self._eof = True
            return b""
        self.out += len(out)
        if self._hash_out:
            self._hash.update(out)
        if self.compression != "none":
            self._check_ratio()
        return out

    def drain(self) -> None:
        while self.chunk():
            pass

    def close(self) -> None:
        """Stop the hashing threads (also when the layer was refused half-way)."""
        self._hash.close()
        close = getattr(self._raw, "close", None)
        if close is not None:
            close()

    def diff_id(self) -> str:
        if not self._hash_out:
            # the uncompressed bytes are the blob: its verified digest is the DiffID, and
            # hashing the same bytes twice would cost a third of the scan
            verified = self._raw.verified_digest  # type: ignore[attr-defined]
            if not verified:
                raise ImageError(f"{self._what}: layer not fully read")
            return verified
        return "sha256:" + self._hash.hexdigest()
