"""Suite-wide set-up: ^C reaches the programs the tests start.

A shell starts a background job (`make test &`, a CI step run without job control) with
SIGINT ignored, and every child inherits that: a test that types ^C at `prov exec`, or sends
SIGINT to `prov sweep`, would then wait on a program that cannot hear it. A handler (unlike
SIG_IGN) is reset to the default in a program the tests exec, so one is installed here.
"""

from __future__ import annotations

import signal


def pytest_configure(config) -> None:
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
