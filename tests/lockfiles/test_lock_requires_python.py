"""`prov lock` writes the Python range the environment requires, not the patch release it
ran on: real uv and pip install the lock into an interpreter of another patch release."""

from __future__ import annotations

import platform
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

from lockfiles.pylock import requires_python
from tests import installer_tools as tools
from tests.helpers import run_prov

pytestmark = pytest.mark.timeout(900)


def other_patch_release() -> str | None:
    """An interpreter of this minor series but another patch release (Debian's, here)."""
    minor = ".".join(platform.python_version().split(".")[:2])
    for candidate in (f"/usr/bin/python{minor}", shutil.which(f"python{minor}")):
        if not candidate or not Path(candidate).exists():
            continue
        out = subprocess.run([candidate, "-c", "import platform; print(platform.python_version())"],
                             capture_output=True, text=True).stdout.strip()
        if out.startswith(minor + ".") and out != platform.python_version():
            return candidate
    return None


@pytest.fixture(scope="module")
def lock(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("rp")
    python = tools.new_venv(root / "venv")
    tools.pip_install(python, "six==1.16.0", "idna==3.10")
    out = root / "pylock.toml"
    p = run_prov("lock", "--python", python, "--out", str(out))
    assert p.returncode == 0, p.stderr
    return out


@pytest.mark.slow
def test_requires_python_is_a_range_that_holds_the_series(lock):
    data = tomllib.loads(lock.read_text())
    spec = SpecifierSet(data["requires-python"])
    minor = ".".join(platform.python_version().split(".")[:2])
    assert f"{minor}.0" in spec and f"{minor}.99" in spec, spec
    assert not any(s.operator in ("==", "===") for s in spec), spec
    assert "python_full_version" not in data["environments"][0]


@pytest.mark.slow
@pytest.mark.parametrize("installer", ["uv", "pip"])
def test_another_patch_release_installs_the_lock(lock, tmp_path, installer):
    other = other_patch_release()
    if other is None:
        pytest.skip("no interpreter of another patch release of this minor series here")
    venv = tmp_path / "v"
    subprocess.run([other, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    if installer == "uv":
        tools.uv_install(python, "-r", str(lock))
    else:  # pip >= 25.1 reads pylock.toml with -r
        subprocess.run([tools.tool("pip"), "--python", python, "install", "-q", "-r", str(lock)],
                       check=True)
    out = subprocess.run([python, "-c", "import six, idna; print(six.__version__)"],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "1.16.0"


@pytest.mark.parametrize("stated, expected", [
    ([], ">=3.11,<3.12"),
    ([">=3.7", ">=3.9", ">=2.7, !=3.0.*, !=3.1.*, !=3.2.*"], ">=3.9"),
    ([">=3.8", "<4", "<3.14,>=3.10", "!=3.12.1"], "!=3.12.1,<3.14,>=3.10"),
    (["not a specifier"], ">=3.11,<3.12"),
])
def test_the_range_is_the_intersection(stated, expected):
    assert requires_python("3.11.7", stated) == expected
