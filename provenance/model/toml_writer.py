"""A small deterministic TOML emitter for manifests.

tomlkit is the right tool for editing files people wrote (it keeps comments and order), but
it needs ~0.3 s to emit a 700-package manifest. Manifests are generated, so this writer emits
them directly: keys sorted, scalars before sub-tables, one `[dotted.header]` per table.
Files are read back with the standard library's tomllib; the round trip is byte-identical.
"""

from __future__ import annotations

import math
import re
from typing import Any

from provenance.model.text import SURROGATE, without_surrogates

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_ESCAPES = {
    "\\": "\\\\",
    '"': '\\"',
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
}
_NEEDS_ESCAPE = re.compile(r'[\\"\x00-\x1f\x7f]')


def _escape_char(m: re.Match[str]) -> str:
    ch = m.group(0)
    return _ESCAPES.get(ch) or f"\\u{ord(ch):04X}"


def string(value: str) -> str:
    return '"' + _NEEDS_ESCAPE.sub(_escape_char, value) + '"'


def key(name: str) -> str:
    return name if _BARE_KEY.match(name) else string(name)


def scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return string(value)
    if isinstance(value, list):
        return "[" + ", ".join(scalar(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} as a TOML value")


def _emit_table(out: list[str], path: list[str], table: dict[str, Any], header: bool) -> None:
    scalars = sorted(k for k, v in table.items() if not isinstance(v, dict))
    tables = sorted(k for k, v in table.items() if isinstance(v, dict))
    # A header is needed when the table holds values, or is empty (to keep it on read).
    if header and (scalars or not tables):
        if out:
            out.append("")
        out.append("[" + ".".join(key(p) for p in path) + "]")
    for k in scalars:
        out.append(f"{key(k)} = {scalar(table[k])}")
    for k in tables:
        _emit_table(out, [*path, k], table[k], header=True)


def dumps(doc: dict[str, Any], first_keys: tuple[str, ...] = ()) -> str:
    """Emit `doc`; `first_keys` (top-level scalars) come first, in the order given."""
    out: list[str] = []
    for k in first_keys:
        if k in doc:
            out.append(f"{key(k)} = {scalar(doc[k])}")
    rest = {k: v for k, v in doc.items() if k not in first_keys}
    _emit_table(out, [], rest, header=False)
    text = "\n".join(out) + "\n"
    if SURROGATE.search(text):  # a name that is not UTF-8: kept as `\xNN`, as JSON keeps it
        return dumps(without_surrogates(doc), first_keys)
    return text
