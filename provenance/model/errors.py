"""The one error base. Every room's errors subclass `ProvError`; the CLI turns it into one line.

Exit codes mean the same thing in every command (listed in `prov --help` and docs/reference):
"""

from __future__ import annotations

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
