"""Secret redaction: the one pass every stored or printed surface goes through.

Four kinds of rule, applied together (each in its own module):
- names (secret_names.py): a value under a secret-like name (`HF_TOKEN`, `api.key`,
  `X-Api-Key`) is hidden; a short list of known non-secret names keeps behaviour variables
  visible;
- structure (secret_text.py): credentials recognisable by their form anywhere in a text
  (key blocks, URL user-info, connection strings, provider token shapes, secret-named
  assignments, long random runs), found in linear time;
- grammar (secret_argv.py): the options and subcommands of a command line that take a
  secret, and `sh -c` scripts word by word;
- value (KnownSecrets, here): every value a run's redaction hid (its environment, argv,
  tags, params, name) is removed wherever it appears again in what prov stores for that
  run (logs, the git diff, facts.json, run-dir files, records).

A hidden value becomes `<redacted>`, or, given a per-store key (`store_key`), a keyed digest
`<redacted:hmac:HEX>`: the value stays secret but two runs whose secret differs still differ
in identity, so the gate can say "differs" without revealing it.

Standard library only: the Python collector imports this inside whatever interpreter it
inspects (`prov snapshot --python PATH`).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from provenance.model import secret_argv, secret_text
from provenance.model.classes import REDACTED
from provenance.model.secret_names import (  # noqa: F401  (the public names of redaction)
    KNOWN_NOT_SECRET,
    is_secret_name,
    is_secret_pair,
)

KEY_FILE = "redact.key"  # in the store directory, mode 0600, created on first use
_DIGEST_HEX = 16  # 64 bits: enough to tell values apart, keyed so it reveals nothing
Mark = Callable[..., str]  # mark(secret, named=False)


def looks_like_secret(value: str) -> bool:
    """Whether `value` contains a credential recognisable by its shape alone."""
    return redact_text(value) != value


# ---- marking ------------------------------------------------------------------------------

def keyed_mac(value: str, key: bytes) -> str:
    """`hmac:HEX` of a value under the store's key: equal values of one store compare
    equal, and the digest reveals nothing of the value (not even a short one)."""
    mac = hmac.new(key, value.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()
    return f"hmac:{mac[:_DIGEST_HEX]}"


def keyed_digest(secret: str, key: bytes) -> str:
    return f"<redacted:{keyed_mac(secret, key)}>"


def _marker(key: bytes | None, known: KnownSecrets | None = None,
            by_name: bool = False) -> Mark:
    def mark(secret: str, named: bool = False) -> str:
        if is_redacted(secret):  # redacting twice is redacting once
            return secret
        if known is not None:
            known.add(secret, by_name=by_name or named)
        return keyed_digest(secret, key) if key else REDACTED
    return mark


def is_redacted(value: object) -> bool:
    return isinstance(value, str) and value.startswith("<redacted")


# ---- secrets known by value ---------------------------------------------------------------
MIN_KNOWN_LENGTH = 6  # shorter values ("1", "true", "admin") would wipe ordinary output
MIN_NAMED_WORD = 12  # a value hidden only by a name or an option, if an ordinary word
_NOT_WORTH = frozenset({"true", "false", "none", "null", "yes", "no", "redacted"})
# An ordinary word: `ubuntu`, `Production`, `pre-production`, `my_profile`, `8080`.
# A list of numbers (`"scores": [-0.5, -0.5]` where a name looked secret) is data, and
# hiding it inside JSON would leave a document no parser reads.
_NUMBER_LIST = re.compile(r"\[[0-9\s,.eE+\-]*\]")
_ORDINARY_WORD = re.compile(r"[A-Za-z][a-z]*(?:[-_.][A-Za-z][a-z]*)*|[A-Z]+|[0-9]+")


class KnownSecrets:
    """The values one run's redaction hid (environment values, argv words, tags, params,
    name): every writer of the run gets this one object and removes them wherever they
    appear again (the stored logs, the git diff, facts.json, run-dir files, the record).

    Kept: values of at least MIN_KNOWN_LENGTH characters that are not a plain number
    (under 8 digits) or a boolean-like word. A value hidden because a name or an option
    announced it, not by its shape (`XDG_SESSION_DESKTOP=ubuntu`: SESSION is a secret word;
    `./deploy.sh -p production`), is kept only when it is not an ordinary word
    (_ORDINARY_WORD: `hunter2` is not) or has MIN_NAMED_WORD characters, so `ubuntu` and
    `production` are not removed from every log and fact. The password of a
    `user:password` value is kept on its own too; a multi-line value line by line (a log is
    redacted in lines). The values live in memory only, never stored."""

    def __init__(self) -> None:
        self._values: set[str] = set()
        self._longest_first: list[str] | None = None

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, value: str) -> bool:
        return value in self._values

    def add(self, value: str, by_name: bool = False) -> None:
        """Keep `value` (and its lines) if worth it; `by_name`: it was hidden because a name
        or an option announced it, not because of its shape."""
        lines = {v: by_name for v in (value.strip(), *(x.strip() for x in value.splitlines()))}
        for v in list(lines):
            user, sep, password = v.partition(":")
            if sep and user and password and not any(c.isspace() for c in v):
                lines.setdefault(password, True)  # a password alone: any word
        for v, named in lines.items():
            if self._worth(v, named) and v not in self._values:
                self._values.add(v)
                self._longest_first = None

    @staticmethod
    def _worth(v: str, by_name: bool) -> bool:
        if (len(v) < MIN_KNOWN_LENGTH or v.lower() in _NOT_WORTH or is_redacted(v)
                or (v.isdigit() and len(v) < 8) or _NUMBER_LIST.fullmatch(v)):
            return False
        return not (by_name and len(v) < MIN_NAMED_WORD and _ORDINARY_WORD.fullmatch(v))

    def hide_in(self, text: str, key: bytes | None = None) -> str:
        """`text` with every known value hidden (and nothing else)."""
        return self.scrub(text, _marker(key, self))

    def hide_in_tree(self, doc: Any, key: bytes | None = None) -> Any:
        """A JSON-like tree with every known value hidden in its strings."""
        if isinstance(doc, dict):
            return {k: self.hide_in_tree(v, key) for k, v in doc.items()}
        if isinstance(doc, list | tuple):
            return [self.hide_in_tree(v, key) for v in doc]
        return self.hide_in(doc, key) if isinstance(doc, str) else doc

    def occurs_in(self, text: str) -> bool:
        return any(v in text for v in self._values)

    def longest(self) -> int:
        """The length in UTF-8 bytes of the longest known value (0: none)."""
        return max((len(_utf8(v)) for v in self._values), default=0)

    def spans(self, text: str | bytes) -> list[tuple[int, int]]:
        """Where the known values occur in `text` (str, or bytes as UTF-8), overlapping and
        nested occurrences merged into one span. One `str.find` scan per value (a regex
        alternation of the values tests every value at every position: 10x slower)."""
        if self._longest_first is None:
            self._longest_first = sorted(self._values, key=len, reverse=True)
        found = []
        for v in self._longest_first:
            needle = v if isinstance(text, str) else _utf8(v)
            i = text.find(needle)
            while i >= 0:
                found.append((i, i + len(needle)))
                i = text.find(needle, i + len(needle))
        found.sort()
        merged: list[tuple[int, int]] = []
        for start, end in found:
            if merged and start < merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], end))
            else:
                merged.append((start, end))
        return merged

    def scrub(self, text: str, mark: Mark) -> str:
        """`text` with every known value replaced by its mark (see spans)."""
        if not self._values or not text:
            return text
        out, pos = [], 0
        for start, end in self.spans(text):
            out += [text[pos:start], mark(text[start:end])]
            pos = end
        return "".join(out) + text[pos:] if out else text


def _utf8(value: str) -> bytes:
    """A value's bytes: an environment's undecodable bytes (surrogateescape) as they were;
    any other lone surrogate (from JSON) as its code point's UTF-8 form."""
    try:
        return value.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return value.encode("utf-8", "surrogatepass")


def secrets_of_run(env: Mapping[str, str], argv: Sequence[str],
                   labels: Mapping[str, Any] | None = None) -> KnownSecrets:
    """What redaction hides in a run's environment (all of it: what the command sees, not
    only what the snapshot records), argv and labels (tags, params, name): the
    KnownSecrets its writers remove by value."""
    known = KnownSecrets()
    for name, value in env.items():
        redact_value(str(name), str(value), known=known)
    redact_argv([str(a) for a in argv], known=known)
    for name, value in (labels or {}).items():
        if isinstance(value, str):
            redact_value(str(name), value, known=known)
        elif isinstance(value, Mapping):
            redact_tree(value, known=known)
    return known


def store_key(store_dir: str | Path) -> bytes:
    """The store's redaction key (32 random bytes), created mode 0600 on first use."""
    path = Path(store_dir) / KEY_FILE
    if not path.parent.is_dir():  # a new store: exec redacts before the store's first write
        path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return bytes.fromhex(path.read_text(encoding="ascii").strip())
    key = os.urandom(32)
    with os.fdopen(fd, "w", encoding="ascii") as fh:
        fh.write(key.hex() + "\n")
    return key


# ---- the public passes --------------------------------------------------------------------

def redact_text(text: str, key: bytes | None = None,
                known: KnownSecrets | None = None) -> str:
    """`text` with every credential the structural rules recognise hidden, and every value
    in `known` (a run's KnownSecrets) too; what is hidden is added to `known`."""
    return secret_text.scan(text, _marker(key, known), known)


def strip_url_credentials(text: str, key: bytes | None = None) -> str:
    """URLs (and any text) with credentials hidden: userinfo, signed query parameters, ..."""
    return redact_text(text, key)


def redact_value(name: str, value: str, key: bytes | None = None,
                 known: KnownSecrets | None = None) -> str:
    """The value to record for `name`: itself, with credentials hidden, or wholly hidden."""
    value = str(value)
    if not value:
        return value
    if is_secret_pair(name, value):
        return _marker(key, known, by_name=True)(value)
    return secret_text.scan(value, _marker(key, known), known)


def redact_argv(argv: list[str], key: bytes | None = None,
                known: KnownSecrets | None = None) -> list[str]:
    """Each argument redacted by the argv grammar (secret_argv.py); every word is also
    scanned as text."""
    return secret_argv.argv([str(a) for a in argv], _marker(key, known), known)


def redact_command_text(text: str, key: bytes | None = None,
                        known: KnownSecrets | None = None) -> str:
    """A shell command line as one string (an image history line `/bin/sh -c ...`), word
    by word, its spacing kept; the script after `sh -c` as the shell splits it."""
    return secret_argv.command_text(text, _marker(key, known), known)


def redact_tree(doc: Any, key: bytes | None = None, name: str = "",
                known: KnownSecrets | None = None) -> Any:
    """Any JSON-like tree: a secret-named key hides its whole subtree; strings are scanned."""
    return secret_text.tree(doc, _marker(key, known), known, name)


# Sections of a stored document whose names come from the user or the workload (parameters,
# tags, environments, run facts): a secret-like name hides its value there. Everywhere else
# the names are prov's own structure (`key` of a change, `digest`, `diff_secrets_redacted`),
# so only value shapes are looked for.
USER_NAMED_SECTIONS = frozenset({"params", "tags", "env", "env_extra", "facts", "runtime",
                                 "name", "labels"})


def _shapes_only(doc: Any, mark: Mark, known: KnownSecrets | None) -> Any:
    if isinstance(doc, dict):
        return {k: (secret_text.tree(v, mark, known, str(k)) if k in USER_NAMED_SECTIONS
                    else _shapes_only(v, mark, known)) for k, v in doc.items()}
    if isinstance(doc, list | tuple):
        return [_shapes_only(v, mark, known) for v in doc]
    return secret_text.scan(doc, mark, known) if isinstance(doc, str) else doc


def redact_record(doc: dict[str, Any], key: bytes | None = None,
                  known: KnownSecrets | None = None) -> dict[str, Any]:
    """A run record (or any stored document) with every surface redacted: `command` by the
    argv grammar, user-named sections by name and shape, prov's own fields by shape.
    Idempotent: redacting twice is once."""
    mark = _marker(key, known)
    out = {}
    for k, v in doc.items():
        if k in ("command", "argv") and isinstance(v, list | tuple):
            out[k] = secret_argv.argv([str(a) for a in v], mark, known)
        elif k in USER_NAMED_SECTIONS:
            out[k] = secret_text.tree(v, mark, known, str(k))
        else:
            out[k] = _shapes_only(v, mark, known)
    return out


def redact_diff(text: str, key: bytes | None = None,
                known: KnownSecrets | None = None) -> tuple[str, int]:
    """A `git diff` with secrets hidden, and how many lines were changed.

    Key blocks (PEM, PuTTY) are hidden whole, whatever `+`/`-` starts their lines; the rest
    line by line, so the stored diff keeps its shape (a reader can still see which lines
    changed); the record should say `secrets_redacted: N` when N > 0."""
    mark = _marker(key, known)
    blocks = secret_text.key_blocks(text, mark)
    changed = text.count("\n") - blocks.count("\n") + (blocks != text)
    lines = blocks.splitlines(keepends=True)
    for i, line in enumerate(lines):
        clean = secret_text.scan(line, mark, known)
        if clean != line:
            lines[i] = clean
            changed += 1
    return "".join(lines), changed
