"""`prov snapshot --python PATH` where PATH is no usable interpreter: bad input (exit 2), one
line, nothing stored and nothing written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers import assert_one_line_error, run_prov


def _junk(tmp_path: Path, executable: bool) -> str:
    path = tmp_path / ("junk-exec" if executable else "junk")
    path.write_bytes(os.urandom(256))
    if executable:
        path.chmod(0o755)
    return str(path)


CASES = {
    "missing": lambda tmp: "/nonexistent/python",
    "directory": lambda tmp: str(tmp),
    "junk file": lambda tmp: _junk(tmp, executable=False),
    "junk executable": lambda tmp: _junk(tmp, executable=True),
    "/bin/false": lambda tmp: "/bin/false",
    "/bin/true": lambda tmp: "/bin/true",
}


def _objects(store: Path) -> list[Path]:
    return [p for p in store.rglob("*") if p.is_file()] if store.exists() else []


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("with_out", [False, True])
def test_a_bad_interpreter_is_bad_input_and_stores_nothing(tmp_path, case, with_out):
    store = tmp_path / "store"
    python = CASES[case](tmp_path)
    out = tmp_path / "m.toml"
    args = ["snapshot", "--python", python] + (["--out", str(out)] if with_out else [])
    err = assert_one_line_error(run_prov(*args, env={"PROV_STORE": str(store)}), code=2)
    assert "--python" in err and python in err
    assert _objects(store) == []
    assert not out.exists()


def test_a_real_interpreter_is_still_stored(tmp_path):
    import sys

    store = tmp_path / "store"
    proc = run_prov("snapshot", "--python", sys.executable, env={"PROV_STORE": str(store)})
    assert proc.returncode == 0, proc.stderr
    assert _objects(store)


def test_a_bare_name_is_found_on_path(tmp_path):
    import shutil

    name = "python3" if shutil.which("python3") else "python"
    store = tmp_path / "store"
    proc = run_prov("snapshot", "--python", name, env={"PROV_STORE": str(store)})
    assert proc.returncode == 0, proc.stderr
    missing = run_prov("snapshot", "--python", "no-such-python-here",
                       env={"PROV_STORE": str(store)})
    assert "no such file" in assert_one_line_error(missing)
