"""Property: any mutation of a valid layer's header bytes makes the tar reader either yield
entries or raise ImageError: never another exception, never a hang, never unbounded memory
(the reader moves forward only, so a mutated stream is read in at most a bounded number of
steps; each body is skipped, not held)."""

from __future__ import annotations

import signal
import tracemalloc

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from containers import ImageError
from containers.tarstream import BLOCK, entries
from tests.hostile.containers.cases import file, link, tar

LAYER = tar(
    [
        file("etc/os-release", b"ID=debian\n"),
        file("a", b"y" * 1500),
        file("b", b""),
        link("c", "a"),
        file("d", b"z" * 10),
    ]
)
HEADERS = [0, 1024, 3072, 3584, 4096]  # offsets of the 512-byte headers in LAYER
MEMORY_BOUND = 8 << 20


def _chunks(data: bytes):
    pieces = [data[i : i + 4096] for i in range(0, len(data), 4096)]
    return lambda: pieces.pop(0) if pieces else b""


def _read_all(data: bytes) -> int:
    count = 0
    for _, body in entries(_chunks(data), "layer"):
        count += 1
        assert count <= len(data) // BLOCK + 1  # forward only: at most one entry a block
        body.feed(lambda _b: None)
    return count


class _Timeout(Exception):
    pass


def _alarm(_sig, _frame):
    raise _Timeout


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    header=st.sampled_from(HEADERS),
    edits=st.lists(
        st.tuples(st.integers(0, BLOCK - 1), st.integers(0, 255)), min_size=1, max_size=24
    ),
    fix_checksum=st.booleans(),
    field=st.sampled_from(
        [
            None,
            b"-0000002000\0",
            b"-0000001000\0",
            b"\xff" * 12,
            b"\x80" + b"\x7f" * 11,
            b"+1\0",
            b"1_0\0",
            b"77777777777\0",
        ]
    ),
)
def test_header_mutations(header: int, edits, fix_checksum: bool, field) -> None:
    data = bytearray(LAYER)
    block = bytearray(data[header : header + BLOCK])
    for pos, value in edits:
        block[pos] = value
    if field is not None:
        block[124:136] = field
    if fix_checksum:  # so the mutation reaches the fields behind the checksum check
        block[148:156] = b" " * 8
        block[148:156] = b"%06o\0 " % sum(block)
    data[header : header + BLOCK] = block
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(5)
    tracemalloc.start()
    try:
        _read_all(bytes(data))
    except ImageError as exc:
        assert "\n" not in str(exc)
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert peak < MEMORY_BOUND
