"""The command's stdout and stderr as the store keeps them: with secrets hidden.

A log is redacted line by line by the one redaction rule (provenance/model/redact.py) before
it reaches the store's writer: every value the run's redaction hid in its environment, argv,
tags, params or name (the run's KnownSecrets: a program echoing `$HF_TOKEN` or its
`--password`), and every credential recognisable by its structure (a traceback showing
`api_key="sk-..."`, a `curl -v` echoing `Authorization: Bearer ...`). What prov cannot know
is a secret the program computes or reads from a file and prints without a telling shape or
name: that is stored as printed (docs/guides/exec.md, "What the logs keep"). The terminal
gets the output as the program wrote it. A line is held until its newline (a
secret split across two reads is still one line), at most LINE_LIMIT bytes; an unterminated
last line is written at close. After a SIGKILL of prov that last partial line is lost.
The rules cost about 4-7 MB/s of text on the 2-core machine, on the supervisor's pump: a
program writing text faster than that is slowed by its pipe; output without letters passes.
"""

from __future__ import annotations

import re
from typing import Any

from provenance.model.errors import ProvError
from provenance.model.redact import KnownSecrets, redact_text

LINE_LIMIT = 64 * 1024
_LETTER = re.compile(rb"[A-Za-z]")


def redact_bytes(data: bytes, key: bytes | None, known: KnownSecrets | None = None) -> bytes:
    """Bytes with secrets hidden; bytes that are not UTF-8 pass through unchanged. Bytes
    without an ASCII letter hold no secret a structural rule names (a stream of zeros,
    binary output): only the known values are looked for there."""
    text = data.decode("utf-8", "surrogateescape")
    if _LETTER.search(data) is None:
        out = known.hide_in(text, key) if known else text
    else:
        out = redact_text(text, key, known)
    return data if out == text else out.encode("utf-8", "surrogateescape")


class RedactedLog:
    """A store writer that receives only redacted lines (the writer's other attributes,
    size, truncated, abort, stop, are the wrapped writer's)."""

    def __init__(self, writer: Any, key: bytes | None, known: KnownSecrets | None = None) -> None:
        self.writer = writer
        self.key = key
        self.known = known
        self.pending = b""

    def write(self, data: bytes) -> None:
        buf = self.pending + data
        cut = buf.rfind(b"\n") + 1
        if cut == 0 and len(buf) < LINE_LIMIT:
            self.pending = buf
            return
        cut = cut or len(buf)  # a line over the limit: its first part goes now
        self.pending = buf[cut:]
        self.writer.write(redact_bytes(buf[:cut], self.key, self.known))

    def close(self) -> str:
        if self.pending:
            self.writer.write(redact_bytes(self.pending, self.key, self.known))
            self.pending = b""
        return self.writer.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.writer, name)


class LostLog:
    """Stands in for a log writer the store could not give (or for an unrecorded run): the
    output still reaches the terminal; nothing is kept, and closing it says why, as a
    failed store write does (the record then warns `stdout not stored: REASON`)."""

    size = 0
    truncated: str | None = None

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def write(self, data: bytes) -> None:
        pass

    def stop(self, reason: str) -> None:
        pass

    def close(self) -> str:
        raise ProvError(self.reason)

    def abort(self) -> None:
        pass
