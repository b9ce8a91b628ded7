"""The one way prov opens a file it was given: bounded, regular files only, strictly decoded.

Every reader of user input (manifests, locks, SBOMs, results, bundles, sweep specs, keys)
goes through `read_input` and its `read_text` / `read_json` / `read_toml` wrappers, so the
hostile cases are refused once, here, with one line and exit 2:
- a FIFO, a device, a socket or a directory (opened with O_NONBLOCK and checked with fstat
  before any read, so a FIFO never hangs and /dev/zero is never read);
- a file over the size bound of its kind (read with a bound too, in case it grows);
- text that is not UTF-8 (UTF-16, junk), named in one line;
- JSON or TOML nested deeper than MAX_DEPTH (a 100k-deep document would otherwise raise
  RecursionError in the parser or in whatever walks the tree afterwards);
- JSON whose text and parsed objects would not fit MAX_JSON_MEMORY (`json_memory`: a 40 MB
  list of small objects becomes ~1 GB of Python objects), estimated in one pass over the
  text holding no list; `read_json` refuses a file over half that bound before reading it;
- JSON holding a lone UTF-16 surrogate (`"\\ud800"`: not Unicode text, which no UTF-8
  writer accepts) or an integer past Python's 4,300-digit conversion limit.
`check_output` is the matching rule for `--out`: create a file or replace a regular one,
never a device node or a directory.

Standard library only (the model is a leaf).
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import sys
from itertools import accumulate
from pathlib import Path
from typing import Any, BinaryIO

from provenance.model.errors import ProvError
from provenance.model.text import has_lone_surrogate

MiB = 1 << 20
LIMITS: dict[str, int] = {  # bytes, by kind of input
    "manifest": 64 * MiB,
    "lock": 64 * MiB,
    "sbom": 256 * MiB,
    "result": 256 * MiB,
    "record": 64 * MiB,
    "json": 64 * MiB,
    "toml": 16 * MiB,
    "spec": 16 * MiB,
    "key": 64 * 1024,
    "text": 64 * MiB,
}
MAX_DEPTH = 128  # deepest nesting any prov document needs is ~10
MAX_JSON_MEMORY = 128 * MiB  # text plus parsed objects of one JSON document (`json_memory`)


class InputError(ProvError):
    """A file given to prov that it will not read (exit 2, one line)."""


def shown(path: str | os.PathLike[str]) -> str:
    """A path printable on any terminal: undecodable bytes as \\x escapes, never an error."""
    raw = os.fsencode(path)
    text = raw.decode("utf-8", "backslashreplace")
    if len(text) > 300:
        text = text[:150] + "…" + text[-100:]
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def _what(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _open(path: Path, what: str) -> int:
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        return os.open(path, flags)
    except FileNotFoundError:
        raise InputError(f"{what} {shown(path)}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{what} {shown(path)}: is a directory, not a file") from None
    except PermissionError:
        raise InputError(f"{what} {shown(path)}: permission denied") from None
    except OSError as exc:
        reason = {errno.ENAMETOOLONG: "file name too long", errno.ELOOP: "symlink loop",
                  errno.ENOTDIR: "a parent is not a directory"}.get(exc.errno or 0,
                                                                  exc.strerror or str(exc))
        raise InputError(f"{what} {shown(path)}: {reason}") from None


def open_input(path: str | os.PathLike[str], kind: str = "text",
               limit: int | None = None) -> BinaryIO:
    """Regular file `path` opened for reading, after the checks (not a FIFO, a device or a
    directory; at most `limit` bytes, default the kind's bound)."""
    path = Path(path)
    limit = LIMITS.get(kind, LIMITS["text"]) if limit is None else limit
    fd = _open(path, kind)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"{kind} {shown(path)}: is {_what(st.st_mode)}, not a regular file")
        if st.st_size > limit:
            raise InputError(f"{kind} {shown(path)}: {st.st_size} bytes, over the "
                             f"{limit}-byte limit for a {kind}")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb", closefd=True)
    except BaseException:
        os.close(fd)
        raise


def read_input(path: str | os.PathLike[str], kind: str = "text",
               limit: int | None = None) -> bytes:
    """The bytes of regular file `path`, at most `limit` (default: the kind's bound)."""
    limit = LIMITS.get(kind, LIMITS["text"]) if limit is None else limit
    with open_input(path, kind, limit) as fh:
        data = fh.read(limit + 1)  # bounded even if the file grows while read
    if len(data) > limit:
        raise InputError(f"{kind} {shown(path)}: grew past the {limit}-byte limit while read")
    return data


def decode_text(data: bytes, what: str) -> str:
    """Strict UTF-8 (a UTF-8 BOM is dropped); anything else is one line naming the problem."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InputError(f"{what}: UTF-16 text, not UTF-8 (convert it: iconv -f UTF-16 -t UTF-8)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{what}: not UTF-8 text (byte {exc.start}: "
                         f"{data[exc.start:exc.start + 1]!r})") from None
    if "\x00" in text:
        raise InputError(f"{what}: binary data (a NUL byte), not text")
    return text.removeprefix("\ufeff")


_CONTINUATION = bytes(range(0x80, 0xC0))
_LEAD_4 = re.compile(rb"[\xf0-\xf4]")  # a 4-byte sequence: a character above U+FFFF
_LEAD_2 = re.compile(rb"[\xc4-\xef]")  # U+0100 to U+FFFF


def text_memory(data: bytes) -> int:
    """Bytes the UTF-8 `data` takes once decoded, known before decoding it: CPython stores
    every character of a string as wide as its widest (one emoji makes 60 MB of ASCII 240)."""
    if data.isascii():
        return len(data)
    width = 4 if _LEAD_4.search(data) else 2 if _LEAD_2.search(data) else 1
    return width * len(data.translate(None, _CONTINUATION))


def _over(what: str, need: int, max_memory: int) -> InputError:
    return InputError(f"{what}: would take ~{need >> 20} MiB in memory once parsed, over the "
                      f"{max_memory >> 20} MiB bound for one JSON document; refused")


def check_text_memory(data: bytes, what: str, max_memory: int = MAX_JSON_MEMORY) -> None:
    """Refuse JSON bytes whose text alone (counted twice, as text and as parsed strings, like
    `json_memory`) would not fit `max_memory`, before they are decoded."""
    need = 2 * text_memory(data)
    if need > max_memory:
        raise _over(what, need, max_memory)


def decode_json(data: bytes, what: str, max_memory: int = MAX_JSON_MEMORY) -> str:
    """`data` decoded as `decode_text` does, after `check_text_memory`."""
    check_text_memory(data, what, max_memory)
    return decode_text(data, what)


def read_text(path: str | os.PathLike[str], kind: str = "text",
              limit: int | None = None) -> str:
    return decode_text(read_input(path, kind, limit), f"{kind} {shown(path)}")


# Possessive loops (`*+`, `++`): a backtracking `(?:a|b)*` keeps a frame per character
# (~110 bytes each: one 40 MB JSON string took 4.5 GB to skip). A string left open runs to the
# end of the text (or of its line in TOML) rather than failing, so a text of many open quotes
# is skipped in one pass, not one pass per quote.
_JSON_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+(?:"|\\?\Z)', re.DOTALL)
_TOML_SKIP = re.compile(r'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|"(?:[^"\\\n]++|\\.)*+(?:"|\\?$)'
                        r"|'[^'\n]*'|#[^\n]*", re.MULTILINE)
_NOT_BRACKET = re.compile(r"[^\[\]{}]++")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def _depth(text: str) -> int:
    """The deepest nesting of brackets in `text` (strings already removed): one pass in C
    over the brackets alone, holding no list."""
    brackets = _NOT_BRACKET.sub("", text)
    return max(accumulate(map(_STEP.__getitem__, brackets), initial=0))


# Upper bounds measured with tracemalloc on CPython 3.11 (per element, parent slot included):
# an object or array costs at most ~128 bytes beyond its text ([{"a":[]}]: 124), a string
# (value or key) ~72 (unique keys), any value behind a `,` or `:` ~40 (a float: 32).
_PER_CONTAINER, _PER_STRING, _PER_VALUE = 128, 72, 40
_SLACK = 64 << 10  # the parser's own buffers


_ESCAPE_4 = re.compile(r"\\u[dD][89abAB]")  # a surrogate pair: an astral character
_ESCAPE_2 = re.compile(r"\\u(?:0[1-9a-fA-F]|[1-9a-fA-F])")  # U+0100 and above


def _width(text: str) -> tuple[int, int]:
    """Bytes per character of the text itself, and of the strings parsed out of it (CPython
    stores a string at the width of its widest character; `\\uXXXX` escapes count)."""
    top = 0 if text.isascii() else ord(max(text))
    own = 1 if top < 0x100 else 2 if top < 0x10000 else 4
    if "\\u" not in text:
        return own, own
    parsed = 4 if _ESCAPE_4.search(text) else 2 if _ESCAPE_2.search(text) else 1
    return own, max(own, parsed)


def json_memory(text: str, stripped: str | None = None) -> int:
    """Bytes the text and its parsed objects take at most: the text, its strings once parsed
    (each character as wide as the widest in the document; twice where escapes make the
    parser join a string from pieces), plus per object, array, string and value.
    `stripped`: the text with its strings emptied, if the caller has it."""
    if stripped is None:
        stripped = _JSON_STRING.sub('""', text)
    own, parsed = _width(text)
    if "\\" in text:
        parsed *= 2
    containers = stripped.count("{") + stripped.count("[")
    strings = stripped.count('"') // 2
    values = stripped.count(",") + stripped.count(":")
    return ((own + parsed) * len(text) + _PER_CONTAINER * containers + _PER_STRING * strings
            + _PER_VALUE * values + _SLACK)


def check_json_shape(text: str, what: str, max_depth: int = MAX_DEPTH,
                     max_memory: int = MAX_JSON_MEMORY) -> None:
    """Refuse JSON nested deeper than `max_depth` or whose parse would take more than
    `max_memory` bytes (`json_memory`), before any parser sees it."""
    stripped = _JSON_STRING.sub('""', text)
    if _depth(stripped) > max_depth:
        raise InputError(f"{what}: nested deeper than {max_depth} levels")
    need = json_memory(text, stripped)
    if need > max_memory:
        raise _over(what, need, max_memory)


def check_toml_depth(text: str, what: str, max_depth: int = MAX_DEPTH) -> None:
    if _depth(_TOML_SKIP.sub('""', text)) > max_depth:
        raise InputError(f"{what}: nested deeper than {max_depth} levels")


def parse_error(exc: Exception) -> str:
    """A parser's complaint in the user's terms (Python's int-str limit names its own API)."""
    text = str(exc)
    if "integer string conversion" in text:
        return f"an integer of more than {sys.get_int_max_str_digits()} digits"
    return text


_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def refuse_lone_surrogates(text: str, doc: Any, what: str) -> None:
    """A JSON document whose strings hold a lone surrogate is refused (a pair, an emoji
    written `\\ud83d\\ude00`, is one character and passes)."""
    if _ESCAPED_SURROGATE.search(text) and has_lone_surrogate(doc):
        raise InputError(f"{what}: a lone UTF-16 surrogate escape (\\uD800-\\uDFFF) in a "
                         "string: not Unicode text")


def parse_json(text: str, what: str, max_depth: int = MAX_DEPTH) -> Any:
    check_json_shape(text, what, max_depth)
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as exc:  # ValueError: also a 5,000-digit integer
        raise InputError(f"{what}: not JSON ({parse_error(exc)})") from None
    refuse_lone_surrogates(text, doc, what)
    return doc


def parse_toml(text: str, what: str, max_depth: int = MAX_DEPTH) -> Any:
    import tomllib

    check_toml_depth(text, what, max_depth)
    try:
        return tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError, RecursionError) as exc:
        raise InputError(f"{what}: not valid TOML ({parse_error(exc)})") from None


def read_json(path: str | os.PathLike[str], kind: str = "json", limit: int | None = None) -> Any:
    """A JSON file, refused unread when over half the memory bound (64 MiB: an ASCII text
    that long already takes twice that once parsed), else as `parse_json`."""
    bound = min(LIMITS.get(kind, LIMITS["text"]) if limit is None else limit,
                MAX_JSON_MEMORY // 2)
    what = f"{kind} {shown(path)}"
    return parse_json(decode_json(read_input(path, kind, bound), what), what)


def read_toml(path: str | os.PathLike[str], kind: str = "toml", limit: int | None = None) -> Any:
    return parse_toml(read_text(path, kind, limit), f"{kind} {shown(path)}")


def check_output(path: str | os.PathLike[str], what: str = "--out") -> Path:
    """`path` may be created, or replaced if it is a regular file; anything else refused."""
    path = Path(path)
    try:
        st = os.stat(path)  # a symlink to a regular file is that file
    except FileNotFoundError:
        st = None
    except NotADirectoryError:
        raise InputError(f"{what} {shown(path)}: a parent is not a directory") from None
    except OSError as exc:
        raise InputError(f"{what} {shown(path)}: {exc.strerror or exc}") from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise InputError(f"{what} {shown(path)}: is {_what(st.st_mode)}; give a file path")
    parent = path.parent
    if not parent.is_dir():
        why = "is not a directory" if parent.exists() else "no such directory"
        raise InputError(f"{what} {shown(path)}: {shown(parent)} {why}")
    return path
