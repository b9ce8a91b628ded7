"""What every cataloger declares, as syft's do: its name, the globs it owns, and the pure parse
function behind each glob (`generic.NewCataloger(name).WithParserByGlobs(parse, globs...)`).

The image side (`containers.catalog`) dispatches the layer walk's paths over the registered
catalogers' globs; the host collectors call the same parse functions on the host's files.
Standard library only and Python 3.8-compatible: `python_dist` declares its cataloger here
and is imported inside foreign interpreters, so these are plain classes (no dataclasses).
"""

from __future__ import annotations

import re

# What the layer walk keeps of a regular file a glob matches (`containers.walk` has the same)
CONTENT, NAME = "content", "name"


class Glob:
    """One glob a cataloger owns.

    pattern: root-relative (`var/lib/dpkg/status`); `**/` is any number of directories, `*`
    and `?` stay inside one name, `{a,b}` are alternatives. keep: what the walk keeps of a
    matching regular file: CONTENT (its bytes), NAME (only that it is there), or a filter
    over its bytes. test: a further check of the path where a glob cannot say it (not
    `*.md5sums`; a shared object's name). verify: wanted only when files are verified.
    parse: the pure parse function of one matching file's text (None: the cataloger reads
    its matches together, as Python's METADATA with its RECORD). layered: the file is a
    database every installing layer rewrites (dpkg's status, apk's installed), so the layer
    that introduced each package comes from the database's history, not the file's layer.
    """

    __slots__ = ("keep", "layered", "parse", "pattern", "test", "verify")

    def __init__(self, pattern, keep=CONTENT, test=None, verify=False, parse=None,
                 layered=False):
        self.pattern = pattern
        self.keep = keep
        self.test = test
        self.verify = verify
        self.parse = parse
        self.layered = layered

    def __repr__(self) -> str:
        return f"Glob({self.pattern!r})"


class Cataloger:
    """name (`dpkg-db-cataloger`), the globs it owns (first match wins, in registration
    order), and for an OS package database the key of its packages under `os` (`dpkg`)."""

    __slots__ = ("globs", "name", "os_key")

    def __init__(self, name, globs, os_key=""):
        self.name = name
        self.globs = tuple(globs)
        self.os_key = os_key

    def __repr__(self) -> str:
        return f"Cataloger({self.name!r})"


def expand(pattern: str) -> list:
    """`{a,b}` alternatives expanded (`x.{a,b}` -> `x.a`, `x.b`), left to right."""
    start = pattern.find("{")
    if start < 0:
        return [pattern]
    end = pattern.index("}", start)
    head, tail = pattern[:start], pattern[end + 1:]
    return [p for alt in pattern[start + 1:end].split(",") for p in expand(head + alt + tail)]


def translate(pattern: str) -> str:
    """A regular expression for one brace-free glob (see Glob)."""
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:[^/]+/)*")
            i += 3
            continue
        c = pattern[i]
        out.append("[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c))
        i += 1
    return "".join(out)
