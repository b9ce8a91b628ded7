"""PEP 751 locks of real virtual environments, checked with packaging's own validator,
and environments verified against locks written by prov, by pip and by pip freeze."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.pylock import Pylock

from tests.helpers import assert_one_line_error, run_prov

pytestmark = pytest.mark.slow  # processes and venvs: not in make test-fast


def pip(venv: Path, *args: str) -> None:
    subprocess.run([str(venv / "bin/python"), "-m", "pip", "-q", "--disable-pip-version-check",
                    *args], check=True, capture_output=True)


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("lockenv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True)
    pip(root, "install", "pip==26.3", "six==1.16.0", "idna==3.10")
    return root


def pip_list(venv: Path) -> dict[str, str]:
    out = subprocess.run([str(venv / "bin/python"), "-m", "pip", "list", "--format", "json"],
                         capture_output=True, text=True, check=True).stdout
    return {p["name"].lower().replace("_", "-"): p["version"] for p in json.loads(out)}


def lock_venv(venv: Path, out: Path) -> subprocess.CompletedProcess:
    return run_prov("lock", "--python", str(venv / "bin/python"), "--out", str(out))


def verify(lock: Path, venv: Path, *extra: str) -> subprocess.CompletedProcess:
    return run_prov("verify", "--lock", str(lock), "--python", str(venv / "bin/python"), *extra)


def test_lock_is_spec_valid_and_round_trips(venv, tmp_path):
    out = tmp_path / "pylock.toml"
    p = lock_venv(venv, out)
    assert p.returncode == 0, p.stderr
    data = tomllib.loads(out.read_text())
    lock = Pylock.from_dict(data)  # the reference validator from `packaging`
    names = {str(pkg.name): str(pkg.version) for pkg in lock.packages}
    assert names == pip_list(venv)
    assert names["six"] == "1.16.0" and names["pip"] == "26.3"
    six = next(pkg for pkg in lock.packages if pkg.name == "six")
    assert six.wheels and six.wheels[0].filename == "six-1.16.0-py2.py3-none-any.whl"
    assert data["tool"]["prov"]["complete"] is True
    assert data["packages"][0]["tool"]["prov"]["fingerprint"].startswith("sha256:")
    ok = verify(out, venv)
    assert ok.returncode == 0, ok.stdout + ok.stderr


def test_changed_version_and_edited_file_are_named(venv, tmp_path):
    out = tmp_path / "pylock.toml"
    assert lock_venv(venv, out).returncode == 0
    try:
        pip(venv, "install", "six==1.15.0")
        p = verify(out, venv, "--json")
        assert p.returncode == 1
        report = json.loads(p.stdout)
        assert [(m["package"], m["problem"], m["locked"], m["installed"]) for m in report["mismatches"]] == [
            ("six", "version", "1.16.0", "1.15.0")]
    finally:
        pip(venv, "install", "six==1.16.0")
    site = next((venv / "lib").glob("python3*/site-packages"))
    original = (site / "six.py").read_bytes()
    try:
        (site / "six.py").write_bytes(original + b"# edited after install\n")
        p = verify(out, venv, "--json")
        assert p.returncode == 1
        report = json.loads(p.stdout)
        assert [(m["package"], m["problem"], m["installed"]) for m in report["mismatches"]] == [
            ("six", "modified-file", "six.py")]
        table = verify(out, venv)
        assert "six.py" in table.stdout and "modified-file" in table.stdout
    finally:
        (site / "six.py").write_bytes(original)
    assert verify(out, venv).returncode == 0


def test_lock_written_by_pip_is_read_and_verified(venv, tmp_path):
    out = tmp_path / "pylock.toml"
    subprocess.run([str(venv / "bin/python"), "-m", "pip", "lock", "six==1.16.0", "idna==3.10",
                    "-o", str(out)], check=True, capture_output=True, cwd=tmp_path)
    assert "pip" in tomllib.loads(out.read_text())["created-by"]
    p = verify(out, venv)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "installer tooling: pip" in p.stdout  # pip is in the venv but not in pip's lock
    subprocess.run([str(venv / "bin/python"), "-m", "pip", "lock", "six==1.15.0", "idna==3.10",
                    "-o", str(out)], check=True, capture_output=True, cwd=tmp_path)
    p = verify(out, venv, "--json")
    assert p.returncode == 1
    assert [m["package"] for m in json.loads(p.stdout)["mismatches"]] == ["six"]


def test_requirements_with_hashes_from_pip_freeze(venv, tmp_path):
    freeze = subprocess.run([str(venv / "bin/python"), "-m", "pip", "freeze", "--all"],
                            capture_output=True, text=True, check=True).stdout
    req = tmp_path / "requirements.txt"
    req.write_text("# pinned\n" + freeze.replace("six==1.16.0", "six==1.16.0 \\\n    --hash=sha256:" + "0" * 64))
    assert verify(req, venv).returncode == 0
    req.write_text(freeze.replace("idna==3.10", "idna==3.9"))
    p = verify(req, venv, "--json")
    assert [m["package"] for m in json.loads(p.stdout)["mismatches"]] == ["idna"]


def test_bad_locks_are_clear_errors(venv, tmp_path):
    good = tmp_path / "pylock.toml"
    assert lock_venv(venv, good).returncode == 0
    text = good.read_text()
    cases = {
        "pylock.broken.toml": (text[:300] + "\n[[[", "not valid TOML"),
        "pylock.future.toml": (text.replace('lock-version = "1.0"', 'lock-version = "2.0"'),
                               "lock-version '2.0' is not supported"),
        "pylock.windows.toml": (text.replace("sys_platform == 'linux'", "sys_platform == 'win32'"),
                                "the lock is for another platform"),
        "pylock.nohash.toml": (re.sub(r'(\[packages\.wheels\.hashes\]\n)sha256 = "[0-9a-f]+"\n', r"\1", text, count=1),
                               "At least one hash must be provided"),
    }
    for name, (content, message) in cases.items():
        path = tmp_path / name
        path.write_text(content)
        p = verify(path, venv)
        err = assert_one_line_error(p)
        assert message in err, err
    err = assert_one_line_error(verify(tmp_path / "pylock.missing.toml", venv))
    assert "no such lock file" in err
    err = assert_one_line_error(run_prov("lock", "--python", str(venv / "bin/python"), "--out", str(tmp_path / "lock.toml")))
    assert "pylock.toml" in err


def test_offline_lock_says_what_it_cannot_know(venv, tmp_path):
    out = tmp_path / "pylock.toml"
    p = run_prov("lock", "--python", str(venv / "bin/python"), "--out", str(out), "--offline")
    err = assert_one_line_error(p)
    assert "no known artifact" in err and "--find-links" in err and not out.exists()
    p = run_prov("lock", "--python", str(venv / "bin/python"), "--out", str(out), "--offline",
                 "--allow-missing-hashes")
    assert p.returncode == 0
    data = tomllib.loads(out.read_text())
    assert data["tool"]["prov"]["complete"] is False
    assert sorted(data["tool"]["prov"]["missing-hashes"]) == sorted(pip_list(venv))
    six = next(p for p in data["packages"] if p["name"] == "six")
    assert "wheels" not in six and six["tool"]["prov"]["origin"] == "unrecorded"
    assert six["tool"]["prov"]["artifact"].startswith("unknown: the installer recorded no origin")
