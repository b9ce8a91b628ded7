"""docs/guides/locks.md runs as written: each `$ ` line of its console blocks is run in one
scratch directory, in order, with the real uv and pip (tests/installer_tools.py) and this
checkout's prov on PATH, and what it prints (stdout and stderr) must be the lines the guide
shows under it. The lock entry the guide quotes must be in the lock the commands wrote."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests import installer_tools as tools
from tests.cached_venv import CACHE

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "locks.md"
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]  # venvs, installers: not in make test-fast


def blocks(kind: str) -> list[str]:
    return re.findall(rf"^```{kind}\n(.*?)^```$", GUIDE.read_text(), re.S | re.M)


def commands(block: str) -> list[tuple[str, str]]:
    """(command, expected output) for each `$ ` line of a console block."""
    steps: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            steps[-1][1].append(line)
    return [(command, "\n".join(out)) for command, out in steps]


def test_every_console_block_prints_what_the_guide_shows(tmp_path):
    env = dict(os.environ, UV_CACHE_DIR=str(CACHE / "uv-cache"), UV_NO_PROGRESS="1",
               PATH=os.pathsep.join([str(tools.tools_bin()), str(Path(sys.executable).parent),
                                     os.environ.get("PATH", "")]))
    ran = 0
    for block in blocks("console"):
        for command, expected in commands(block):
            p = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300,
                               stdin=subprocess.DEVNULL)
            assert p.stdout.rstrip("\n") == expected, f"$ {command}\n{p.stdout}"
            ran += 1
    assert ran >= 15
    [entry] = blocks("toml")
    assert entry in (tmp_path / "pylock.toml").read_text()
