"""The logs a run stores hold no secret: a key printed by the program (a traceback's source
line, a header echoed) is hidden line by line, also when the program wrote it in pieces;
the terminal still gets what the program wrote."""

# ruff: noqa: F811 - pytest fixtures imported from tests.exec_support
from __future__ import annotations

import sys
from pathlib import Path

from provenance.exec.logs import LINE_LIMIT, RedactedLog
from tests.exec_support import penv, prov, prov_cache, runs_json  # noqa: F401

SECRET = "sk-user-secret-0123456789abcdef"
PROGRAM = f"""
import sys, time
print('client = OpenAI(base_url=x, api_key="{SECRET}")', file=sys.stderr)
sys.stdout.write("Authorization: Bearer sk-user-"); sys.stdout.flush(); time.sleep(0.3)
sys.stdout.write("secret-0123456789abcdef\\nplain line\\n")
sys.stdout.buffer.write(b"not utf-8: \\xff\\xfe\\n")
"""


def test_a_run_stores_its_logs_with_secrets_hidden(penv, tmp_path):
    p = prov("exec", "--", sys.executable, "-c", PROGRAM, env=penv, cwd=tmp_path)
    assert p.returncode == 0
    assert SECRET.encode() in p.stdout + p.stderr  # the terminal got it as written
    run = runs_json(penv)[0]["run_id"]
    out = prov("show", run, "--cat", "stdout", env=penv).stdout
    err = prov("show", run, "--cat", "stderr", env=penv).stdout
    assert b"Authorization: <redacted" in out and b"plain line\n" in out
    assert b"not utf-8: \xff\xfe\n" in out  # bytes that are not text pass unchanged
    assert b'api_key="<redacted' in err
    store = Path(penv["PROV_STORE"])
    assert not [f for f in store.rglob("*") if f.is_file() and SECRET.encode() in f.read_bytes()]


class _Sink:
    def __init__(self) -> None:
        self.data, self.size = b"", 0

    def write(self, data: bytes) -> None:
        self.data += data

    def close(self) -> str:
        return "closed"


def test_lines_are_held_until_their_end_and_a_last_partial_line_is_written_at_close():
    sink = _Sink()
    log = RedactedLog(sink, None)
    log.write(b"token=" + SECRET[:6].encode())
    assert sink.data == b""  # no newline yet: the line may go on
    log.write(SECRET[6:].encode() + b"\nnext")
    assert SECRET.encode() not in sink.data and sink.data.endswith(b"\n")
    assert log.close() == "closed" and sink.data.endswith(b"next")
    big = RedactedLog(_Sink(), None)
    big.write(b"x" * (LINE_LIMIT + 1))  # a line longer than the limit is not held forever
    assert len(big.writer.data) == LINE_LIMIT + 1 and big.size == 0
