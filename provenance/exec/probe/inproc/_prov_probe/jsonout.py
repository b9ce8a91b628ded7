"""A small JSON writer: the `json` module would map `_json.so` into a program that may never
have loaded it (and the probe records the program's mapped libraries)."""

_ESCAPES = {i: "\\u%04x" % i for i in range(0x20)}
_ESCAPES.update({ord('"'): '\\"', ord("\\"): "\\\\"})


def _string(s):
    s = s.translate(_ESCAPES)
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates (undecodable bytes in a path): escaped
        s = "".join("\\u%04x" % ord(c) if 0xD800 <= ord(c) < 0xE000 else c for c in s)
    return '"' + s + '"'


def dumps(value):
    """JSON text for dicts, lists, tuples, str, int, float, bool and None (others: str())."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        return repr(value) if value == value and value not in (float("inf"), float("-inf")) \
            else _string(repr(value))
    if isinstance(value, dict):
        return "{" + ",".join(
            _string(str(k)) + ":" + dumps(v) for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(dumps(v) for v in value) + "]"
    return _string(str(value))
