"""A small configuration file a run read, recorded by its values rather than its digest.

Users choose the attention backend or the KV-cache dtype in a config file as often as on
the command line (`{"attention_backend": "TRITON_ATTN"}`). Recorded as one sha256, any
change refuses as "an input changed" and no preset can declare it; recorded leaf by leaf
(`inputs.files.cfg.json.values.attention_backend`), the refusal names the setting and
`--vary attention-backend` covers it as it covers `code.args.attention_backend`.

Only JSON and TOML documents whose top level is a table, at most MAX_BYTES long and with at
most MAX_LEAVES scalar leaves, are read this way: every value of the document is then in
the record, so nothing that could change what the program does is lost. Anything else
(bigger, another format, not parseable, nested lists) is left to its digest.
"""

from __future__ import annotations

import json
import tomllib
from typing import Any

MAX_BYTES = 64 * 1024
MAX_LEAVES = 256
MAX_DEPTH = 8
SUFFIXES = (".json", ".toml")

_Scalar = str | int | float | bool


class _NotConfig(Exception):
    pass


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, _Scalar)


def _leaf(value: Any) -> Any:
    if value is None:
        return "null"
    if isinstance(value, float) and value != value:  # NaN is no JSON
        return "nan"
    return value


def _flatten(doc: dict[str, Any], depth: int, count: list[int]) -> dict[str, Any]:
    if depth > MAX_DEPTH:
        raise _NotConfig
    out: dict[str, Any] = {}
    for key, value in doc.items():
        if isinstance(value, dict):
            out[str(key)] = _flatten(value, depth + 1, count)
            continue
        if isinstance(value, list) and all(_scalar(v) for v in value):
            value = [_leaf(v) for v in value]
        elif not _scalar(value):
            raise _NotConfig  # a list of tables: not a flat configuration
        else:
            value = _leaf(value)
        count[0] += 1
        if count[0] > MAX_LEAVES:
            raise _NotConfig
        out[str(key)] = value
    return out


def config_values(name: str, data: bytes) -> dict[str, Any] | None:
    """The document's values as a nested table of scalar leaves; None when `data` is not a
    small JSON/TOML table (it is then identified by its digest alone)."""
    if not name.endswith(SUFFIXES) or len(data) > MAX_BYTES:
        return None
    try:
        text = data.decode("utf-8")
        doc = json.loads(text) if name.endswith(".json") else tomllib.loads(text)
        if not isinstance(doc, dict) or not doc:
            return None
        return _flatten(doc, 0, [0])
    except (ValueError, RecursionError, _NotConfig):
        return None
