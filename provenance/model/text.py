"""Text a record can hold: what the OS hands prov (names, values, paths) may not be Unicode.

POSIX file names, argv and environment strings are bytes; Python decodes the bytes that are
not UTF-8 to lone surrogates (U+DC80-U+DCFF, PEP 383), which no UTF-8 encoder, JSON
document or TOML file accepts. Every document prov writes goes through `json_text` (or
`without_surrogates`), which keeps such a byte as the four characters `\\xNN`, as `ls`, git
and `inputs.shown` print it; any other lone surrogate (a JSON `"\\ud800"`) becomes `\\uXXXX`.
A name holding `\\xff` is thus recorded exactly as a terminal shows it, never as a crash.
Text without surrogates (all of it, nearly always) is written unchanged, at the cost of one
regex scan. Standard library only (the model is a leaf).
"""

from __future__ import annotations

import json
import re
from typing import Any

SURROGATE = re.compile("[\ud800-\udfff]")


def _escape(m: re.Match[str]) -> str:
    code = ord(m.group(0))
    if 0xDC80 <= code <= 0xDCFF:  # an undecodable byte, as surrogateescape carries it
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}"


def escape_surrogates(text: str) -> str:
    """`text` with each lone surrogate spelled out (`\\xff`, `\\ud800`); else unchanged."""
    return SURROGATE.sub(_escape, text) if SURROGATE.search(text) else text


def without_surrogates(obj: Any) -> Any:
    """`obj` (dicts, lists, tuples, strings, scalars) with every string, keys included,
    passed through `escape_surrogates`."""
    if isinstance(obj, str):
        return escape_surrogates(obj)
    if isinstance(obj, dict):
        return {escape_surrogates(k) if isinstance(k, str) else k: without_surrogates(v)
                for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [without_surrogates(v) for v in obj]
    return obj


def json_text(obj: Any, **options: Any) -> str:
    """`json.dumps(obj, ensure_ascii=False, **options)`, always encodable as UTF-8."""
    text = json.dumps(obj, ensure_ascii=False, **options)
    if SURROGATE.search(text) is None:
        return text
    return json.dumps(without_surrogates(obj), ensure_ascii=False, **options)


def has_lone_surrogate(obj: Any) -> bool:
    """Whether any string in a parsed JSON document (keys included) holds a lone surrogate."""
    return SURROGATE.search(json.dumps(obj, ensure_ascii=False)) is not None


def clean(obj: Any) -> Any:
    """`obj` itself when no string in it holds a lone surrogate, else `without_surrogates`."""
    return without_surrogates(obj) if has_lone_surrogate(obj) else obj
