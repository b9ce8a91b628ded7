"""Hostile images through the CLI: each case x pin, snapshot, sbom, lock (issue #19 §4).

Refused cases exit 2 with one line, write nothing and never hang; warned cases exit 0 and the
image lock carries the warning. Every command runs in its own process with a timeout.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.hostile.containers.cases import CASES

PROV = [sys.executable, "-c", "import sys; from provenance.cli import main; sys.exit(main())"]
COMMANDS = {
    "pin": ["pin", "{src}", "-o", "{out}/lock.toml"],
    "snapshot": ["snapshot", "--image", "{src}", "--out", "{out}/snap.json"],
    "sbom": ["sbom", "--image", "{src}", "-o", "{out}/sbom.json"],
    "lock": ["lock", "--image", "{src}", "-o", "{out}/pylock.toml"],
}
REFUSED = [name for name, (_, expect) in CASES.items() if expect == "refused"]
WARNED = [name for name, (_, expect) in CASES.items() if expect == "warned"]
SKIPPED = [name for name, (_, expect) in CASES.items() if expect == "skipped"]


def _prov(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(PROV + argv, cwd=cwd, capture_output=True, text=True, timeout=60)


def _build(tmp: Path, name: str) -> str:
    CASES[name][0](tmp)
    return f"oci:{tmp / 'oci'}"


@pytest.mark.parametrize("name", REFUSED)
@pytest.mark.parametrize("command", list(COMMANDS))
def test_refused_in_one_line(tmp_path: Path, name: str, command: str) -> None:
    src = _build(tmp_path, name)
    out = tmp_path / "out"
    out.mkdir()
    argv = [a.format(src=src, out=out) for a in COMMANDS[command]]
    proc = _prov(argv, tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "internal error" not in proc.stderr
    assert list(out.iterdir()) == []  # nothing half-written


@pytest.mark.parametrize("name", WARNED)
def test_warned_in_the_lock(tmp_path: Path, name: str) -> None:
    import tomllib

    src = _build(tmp_path, name)
    proc = _prov(["pin", src, "-o", str(tmp_path / "lock.toml")], tmp_path)
    assert proc.returncode == 0, proc.stderr
    lock = tomllib.loads((tmp_path / "lock.toml").read_text())
    assert lock.get("warnings"), "the lock records what prov accepted"


@pytest.mark.parametrize("name", SKIPPED)
def test_malformed_content_is_skipped(tmp_path: Path, name: str) -> None:
    """A JSON file nested 100k deep or a RECORD csv cannot parse: read as malformed, the scan
    goes on (pin and sbom exit 0)."""
    src = _build(tmp_path, name)
    for argv in (
        ["pin", src, "-o", str(tmp_path / "lock.toml")],
        ["sbom", "--image", src, "-o", str(tmp_path / "sbom.json")],
    ):
        proc = _prov(argv, tmp_path)
        assert proc.returncode == 0, proc.stderr


def test_duplicate_entries_later_wins(tmp_path: Path) -> None:
    import tomllib

    src = _build(tmp_path, "duplicate entries")
    proc = _prov(["pin", src, "-o", str(tmp_path / "lock.toml")], tmp_path)
    assert proc.returncode == 0, proc.stderr
    lock = tomllib.loads((tmp_path / "lock.toml").read_text())
    assert any("appears twice" in w for w in lock["warnings"])
