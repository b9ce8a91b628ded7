"""A forward-only tar reader over a chunked byte stream (ustar, GNU and PAX headers).

Our own, rather than `tarfile`: it never seeks, skips file bodies in large chunks, keeps no
member list (tarfile's grows with every entry), and turns every malformed header into one
`ImageError`. Names are normalised to image-root-relative paths; `..` is refused.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from containers.errors import ImageError

BLOCK = 512
REGULAR, HARDLINK, SYMLINK, CHARDEV, BLOCKDEV, DIRECTORY, FIFO = "0", "1", "2", "3", "4", "5", "6"
MAX_META = 1 << 20  # a PAX or GNU long-name record larger than this is refused


@dataclass
class Entry:
    path: str  # normalised, relative to the image root, no leading "/"
    type: str
    size: int
    linkname: str = ""
    absolute: bool = False  # the member name started with "/" (recorded as a warning)
    undecodable: bool = False  # the name was not UTF-8 (shown with \\x escapes)


def normalize(name: str, what: str) -> str:
    """`./usr//lib/` -> `usr/lib`; a `..` component is path traversal and refused."""
    if ".." not in name and "//" not in name and not name.startswith(("./", "/")):
        return name[:-1] if name.endswith("/") else name  # the common case, cheaply
    parts = []
    for part in name.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            raise ImageError(f"{what}: path traversal refused: {name!r}")
        parts.append(part)
    return "/".join(parts)


class _Buffer:
    """Exact reads and skips over `chunk()` pieces."""

    def __init__(self, chunk: Callable[[], bytes]) -> None:
        self._chunk = chunk
        self._buf = b""
        self._pos = 0

    def read(self, n: int) -> bytes:
        if n < 0:
            raise ImageError("tar stream: negative read refused")
        avail = len(self._buf) - self._pos
        if avail >= n:
            out = self._buf[self._pos : self._pos + n]
            self._pos += n
            return out
        parts = [self._buf[self._pos :]]
        need = n - avail
        while need > 0:
            data = self._chunk()
            if not data:
                self._buf, self._pos = b"", 0
                return b"".join(parts)  # short: the caller reports truncation
            if len(data) > need:
                parts.append(data[:need])
                self._buf, self._pos = data, need
                return b"".join(parts)
            parts.append(data)
            need -= len(data)
        self._buf, self._pos = b"", 0
        return b"".join(parts)

    def feed(self, n: int, padded: int, sink: Callable[[bytes], None]) -> bool:
        """Pass the next `n` bytes to `sink` piece by piece (never joined), then skip to
        `padded`; False when the stream ends first. Memory stays one chunk."""
        if n < 0 or padded < n:
            raise ImageError("tar stream: negative member size refused")
        avail = len(self._buf) - self._pos
        if avail >= n:
            if n:
                sink(memoryview(self._buf)[self._pos : self._pos + n])
            self._pos += n
            return self.skip(padded - n)
        if avail:
            sink(memoryview(self._buf)[self._pos :] if self._pos else self._buf)
        need = n - avail
        self._buf, self._pos = b"", 0
        while need > 0:
            data = self._chunk()
            if not data:
                return False
            if len(data) > need:
                sink(memoryview(data)[:need])
                self._buf, self._pos = data, need
                return self.skip(padded - n)
            sink(data)
            need -= len(data)
        return self.skip(padded - n)

    def skip(self, n: int) -> bool:
        if n < 0:  # never backwards: a negative size would re-read an earlier header
            raise ImageError("tar stream: negative skip refused")
        avail = len(self._buf) - self._pos
        if avail >= n:
            self._pos += n
            return True
        need = n - avail
        self._buf, self._pos = b"", 0
        while need > 0:
            data = self._chunk()
            if not data:
                return False
            if len(data) > need:
                self._buf, self._pos = data, need
                return True
            need -= len(data)
        return True


def _cstr(field: bytes) -> bytes:
    return field.split(b"\0", 1)[0]


MAX_SIZE = 1 << 40  # 1 TiB: a member size beyond this is refused, not skipped towards
_OCTAL = re.compile(rb"[0-7]+")
_DECIMAL = re.compile(r"[0-9]{1,20}")


def _number(field: bytes, what: str) -> int:
    """A header number: octal digits (NUL/space padded) or GNU base-256; never negative.

    `int()` alone would accept `-1000`, `+1` and `1_0`; a negative size would move the reader
    backwards onto an earlier header, forever. Only plain digits are taken.
    """
    if field and field[0] & 0x80:  # GNU base-256
        if field[0] & 0x40:
            raise ImageError(f"{what}: negative number in tar header")
        value = int.from_bytes(bytes([field[0] & 0x3F]) + field[1:], "big")
        if value > MAX_SIZE:
            raise ImageError(f"{what}: number {value} in tar header over the {MAX_SIZE} limit")
        return value
    text = _cstr(field).strip(b" ")
    if not text:
        return 0
    if not _OCTAL.fullmatch(text):
        raise ImageError(f"{what}: bad number {text[:20]!r} in tar header")
    return int(text, 8)


def _pax_size(value: str, what: str) -> int:
    """A PAX `size`: plain decimal digits only (no sign, no underscore), within MAX_SIZE."""
    if not _DECIMAL.fullmatch(value) or int(value) > MAX_SIZE:
        raise ImageError(f"{what}: malformed PAX size {value[:24]!r}")
    return int(value)


def _decode(raw: bytes) -> str:
    """UTF-8, or `\\xNN` escapes for bytes that are not (a name that is not UTF-8 cannot go
    into a TOML or JSON lock as it is; the walk records a warning for it)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("utf-8", "backslashreplace")


def _pax(data: bytes, what: str) -> dict[str, str]:
    out: dict[str, str] = {}
    pos = 0
    while pos < len(data):
        if data[pos] == 0:
            break
        space = data.find(b" ", pos)
        if space < 0:
            raise ImageError(f"{what}: malformed PAX header")
        try:
            length = int(data[pos:space])
        except ValueError as exc:
            raise ImageError(f"{what}: malformed PAX record length") from exc
        if length <= space - pos or pos + length > len(data):
            raise ImageError(f"{what}: malformed PAX record length")
        record = data[space + 1 : pos + length]
        if not record.endswith(b"\n") or b"=" not in record:
            raise ImageError(f"{what}: malformed PAX record")
        key, _, value = record[:-1].partition(b"=")
        out[_decode(key)] = _decode(value)
        pos += length
    return out


def _escaped(name: bytes, path: str, long_name: str | None, pax: dict[str, str]) -> bool:
    """Whether the member's name was not UTF-8 (so `_decode` escaped it)."""
    if "\\x" not in path:
        return False
    if "path" in pax or long_name is not None:
        return True  # rare: PAX/GNU names with escapes; warned rather than missed
    try:
        name.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


class Body:
    """One member's body, read at most once: whole (`body()`) or streamed (`body.feed`)."""

    __slots__ = ("_buf", "_size", "_padded", "_path", "_what", "consumed")

    def __init__(self, buf: _Buffer, size: int, padded: int, path: str, what: str) -> None:
        self._buf, self._size, self._padded = buf, size, padded
        self._path, self._what = path, what
        self.consumed = False

    def __call__(self) -> bytes:
        self.consumed = True
        data = self._buf.read(self._padded)
        if len(data) < self._padded:
            raise ImageError(f"{self._what}: truncated tar stream in {self._path!r}")
        return data[: self._size]

    def feed(self, sink: Callable[[bytes], None]) -> None:
        """Stream the body into `sink` (a hash's update) without holding it in memory."""
        self.consumed = True
        if not self._buf.feed(self._size, self._padded, sink):
            raise ImageError(f"{self._what}: truncated tar stream in {self._path!r}")


TAIL_CHUNK = 1 << 20


def _check_end(buf: _Buffer, what: str) -> None:
    """After the end-of-archive block, nothing but NUL padding to the end of the stream.

    Tar readers stop at that block, but GNU `tar -i` (--ignore-zeros) reads on: members
    after it (in a second gzip member, or after the zeros) would be extracted by it, and
    hashed into the layer's digest, yet never seen by the catalogers or file verification.
    """
    past = 0
    while True:
        data = buf.read(TAIL_CHUNK)
        if data.strip(b"\0"):
            at = past + len(data) - len(data.lstrip(b"\0"))
            raise ImageError(f"{what}: data {at} bytes after the tar's end-of-archive block "
                             "(`tar -i` would read members there that verification never "
                             "saw); refused")
        if len(data) < TAIL_CHUNK:
            return
        past += len(data)


def entries(chunk: Callable[[], bytes], what: str) -> Iterator[tuple[Entry, Body]]:
    """Yield (entry, body) in archive order; bodies not read are skipped. The stream must
    end with the end-of-archive block and NUL padding only (`_check_end`).

    body() returns the whole body (the caller bounds sizes before asking); body.feed(sink)
    streams it.
    """
    buf = _Buffer(chunk)
    pax: dict[str, str] = {}
    long_name: str | None = None
    long_link: str | None = None
    while True:
        header = buf.read(BLOCK)
        if not header:
            raise ImageError(f"{what}: truncated tar stream (no end-of-archive marker)")
        if len(header) < BLOCK:
            raise ImageError(f"{what}: truncated tar header")
        if header == b"\0" * BLOCK:
            _check_end(buf, what)
            return
        stored = _number(header[148:156], what)
        computed = sum(header[:148]) + sum(header[156:]) + 8 * 32
        if stored != computed:
            raise ImageError(f"{what}: tar header checksum mismatch")
        size = _number(header[124:136], what)
        kind = chr(header[156]) if header[156] else REGULAR
        padded = (size + BLOCK - 1) // BLOCK * BLOCK
        if kind in ("x", "g", "L", "K"):
            if size > MAX_META:
                raise ImageError(f"{what}: oversized tar metadata record ({size} bytes)")
            data = buf.read(padded)
            if len(data) < padded:
                raise ImageError(f"{what}: truncated tar stream")
            data = data[:size]
            if kind == "x":
                pax = _pax(data, what)
            elif kind == "L":
                long_name = _decode(_cstr(data))
            elif kind == "K":
                long_link = _decode(_cstr(data))
            continue  # global PAX headers ('g') carry nothing we use
        name = _cstr(header[0:100])
        if header[257:263] == b"ustar\x00":  # POSIX: a prefix field extends the name
            prefix = _cstr(header[345:500])
            if prefix:
                name = prefix + b"/" + name
        path = long_name if long_name is not None else _decode(name)
        path = pax.get("path", path)
        link = long_link if long_link is not None else _decode(_cstr(header[157:257]))
        link = pax.get("linkpath", link)
        if "size" in pax:
            size = _pax_size(pax["size"], what)
            padded = (size + BLOCK - 1) // BLOCK * BLOCK
        undecodable = _escaped(name, path, long_name, pax)
        pax, long_name, long_link = {}, None, None
        if kind in (HARDLINK, SYMLINK, CHARDEV, BLOCKDEV, DIRECTORY, FIFO):
            body_size = 0 if kind != REGULAR else size
            padded = 0 if kind in (SYMLINK, HARDLINK, DIRECTORY) else padded
        else:
            body_size = size
        entry = Entry(normalize(path, what), kind, body_size, link, path.startswith("/"),
                      undecodable)
        body = Body(buf, body_size, padded, entry.path, what)
        yield entry, body
        if not body.consumed and padded and not buf.skip(padded):
            raise ImageError(f"{what}: truncated tar stream in {entry.path!r}")
