"""The one atomic writer: whole files or none, normal permissions, one-line errors."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from provenance.model.atomic import atomic_open, replace_dir, write_atomic
from provenance.model.errors import EXIT_USAGE, ProvError


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_files_get_the_permissions_of_a_plain_open(tmp_path: Path, umask_022) -> None:
    write_atomic(tmp_path / "a.txt", "hello")
    plain = tmp_path / "plain.txt"
    plain.write_text("x")
    assert (tmp_path / "a.txt").read_text() == "hello"
    assert _mode(tmp_path / "a.txt") == _mode(plain) == 0o644


def test_an_asked_for_mode_wins(tmp_path: Path, umask_022) -> None:
    write_atomic(tmp_path / "key", b"secret", mode=0o600)
    assert _mode(tmp_path / "key") == 0o600


def test_a_failed_write_leaves_the_old_file_and_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_open(target) as fh:
        fh.write(b"half")
        raise RuntimeError("killed mid-write")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_a_missing_directory_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(ProvError, match="no such directory") as err:
        write_atomic(tmp_path / "nope" / "x", "data")
    assert err.value.exit_code == EXIT_USAGE


def test_replace_dir_swaps_whole_directories_with_normal_permissions(
        tmp_path: Path, umask_022) -> None:
    import tempfile

    final = tmp_path / "result"
    final.mkdir()
    (final / "old").write_text("1")
    tmp = Path(tempfile.mkdtemp(dir=tmp_path))  # 0700, as mkdtemp makes it
    (tmp / "new").write_text("2")
    replace_dir(tmp, final)
    assert sorted(p.name for p in final.iterdir()) == ["new"]
    assert _mode(final) == 0o755
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result"]
