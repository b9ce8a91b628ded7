"""Faults built in code for the store tests: small filesystems, read-only mounts, damage.

Mounts need root (the test machines run as root); where `mount` is refused the tests that
need it are skipped with the reason, never passed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


def _mount(*args: str) -> None:
    p = subprocess.run(["mount", *args], capture_output=True, text=True, timeout=30)
    if p.returncode != 0:
        pytest.skip(f"mount {' '.join(args)} refused: {p.stderr.strip()}")


@contextlib.contextmanager
def tmpfs(where: Path, size: str = "2m") -> Iterator[Path]:
    """A tmpfs of `size` mounted at `where` (created), unmounted afterwards."""
    where.mkdir(parents=True, exist_ok=True)
    _mount("-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where))
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True, timeout=30)


def fill(fs: Path, leave: int = 0) -> None:
    """Fill the filesystem mounted at `fs` with one file, then give back `leave` bytes."""
    filler = fs / "filler"
    with open(filler, "wb", buffering=0) as fh:  # unbuffered: close() has nothing left
        try:
            while fh.write(b"\0" * 65536):
                pass
        except OSError:
            pass
    if leave:
        os.truncate(filler, max(0, filler.stat().st_size - leave))


@contextlib.contextmanager
def read_only_copy(store: Path, where: Path) -> Iterator[Path]:
    """`store` copied onto a tmpfs that is then remounted read-only (root ignores mode
    bits, so a 0555 directory would prove nothing here)."""
    with tmpfs(where, "64m"):
        shutil.copytree(store, where / "store", symlinks=True)
        _mount("-o", "remount,ro", str(where))
        yield where / "store"


def one_error_line(stderr: bytes) -> str:
    """The single `prov: error:` line of a refused command (asserting there is no more)."""
    text = stderr.decode("utf-8", "replace")
    assert "Traceback" not in text, text
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("prov: error: "), text
    return lines[0]
