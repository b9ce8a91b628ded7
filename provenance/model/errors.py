"""The one error base. Every room's errors subclass `ProvError`; the CLI turns it into one line.

Exit codes mean the same thing in every command (listed in `prov --help` and docs/reference):
"""

from __future__ import annotations

import errno
import os
import re

EXIT_OK = 0
EXIT_DIFFERS = 1  # a check ran and found a difference (diff, verify, repeat not identical,
# a policy check failed)
EXIT_USAGE = 2  # bad input: a missing file, a malformed document, an invalid option
EXIT_REFUSED = 3  # the gate refused: identity keys differ that no --vary declares
EXIT_UNAVAILABLE = 4  # a service or tool the command needs could not be reached; nothing judged
EXIT_NOT_EVALUATED = 5  # --policy: a checked statistic is missing or not computable, none failed
EXIT_INTERNAL = 70  # a bug in prov (EX_SOFTWARE); PROV_DEBUG=1 shows the traceback

EXIT_CODES: dict[int, str] = {
    EXIT_OK: "success",
    EXIT_DIFFERS: "a check found a difference (diff, verify, repeat) or a policy check failed",
    EXIT_USAGE: "bad input or usage",
    EXIT_REFUSED: "refused by the comparison gate",
    EXIT_UNAVAILABLE: "a needed service, tool or Python package was unavailable (nothing "
                      "was judged)",
    EXIT_NOT_EVALUATED: "a policy was not evaluated: a statistic it checks is missing or not "
                        "computable (no check failed)",
    EXIT_INTERNAL: "internal error in prov",
}


class ProvError(Exception):
    """A user-facing failure: bad input, a refused operation. `exit_code` is the status."""

    exit_code: int = EXIT_USAGE

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


# A message is one line of at most this many characters: a 100,000-character argument
# echoed back is cut in the middle.
MESSAGE_LIMIT = 1000
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def one_line(message: str) -> str:
    """`message` as one printable line: controls (a newline in an argument) spelled out,
    bytes that are not UTF-8 as `\\xNN`, the middle of an over-long message elided."""
    from provenance.model.text import escape_surrogates

    text = _CONTROL.sub(lambda m: repr(m.group(0))[1:-1], escape_surrogates(message))
    if len(text) > MESSAGE_LIMIT:
        head, tail = MESSAGE_LIMIT - 300, 200
        elided = len(text) - head - tail
        text = f"{text[:head]}…({elided} characters elided)…{text[-tail:]}"
    return text


def os_error(exc: OSError) -> ProvError | None:
    """A failed system call on a path the user named or set up (a name too long, a symlink
    loop, a directory where a file belongs, a full disk) as a ProvError, so it is one line:
    exit 4 for a full disk or quota, else 2. None for an OSError naming no path (a broken
    pipe, a socket): that one is prov's to explain."""
    if exc.filename is None:
        return None
    name = os.fsdecode(exc.filename) if isinstance(exc.filename, str | bytes) else exc.filename
    reason = exc.strerror or type(exc).__name__
    code = EXIT_UNAVAILABLE if exc.errno in _FULL else EXIT_USAGE
    return ProvError(f"{name}: {reason}", code)
