"""`prov verify --lock requirements.txt` on files written by the real `uv pip compile`,
`uv export` and `pip freeze`, and on pip's own syntax (includes, options, markers, `===`,
continuations)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from lockfiles.requirements import read_requirements
from tests import installer_tools as tools
from tests.helpers import assert_one_line_error, run_prov

pytestmark = pytest.mark.timeout(900)
PINS = ["six==1.16.0", "idna==3.10", "markupsafe==3.0.2"]
WIN_ONLY = 'colorama==0.4.6 ; sys_platform == "win32"'


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("reqenv") / "venv"
    python = tools.new_venv(root)
    tools.uv_install(python, *PINS)  # a venv without pip: nothing but the pins
    return root


def verify(lock: Path, venv: Path, *extra: str) -> subprocess.CompletedProcess:
    return run_prov("verify", "--lock", str(lock), "--python", str(venv / "bin/python"), *extra)


def mismatches(proc: subprocess.CompletedProcess) -> list[tuple[str, str]]:
    return [(m["package"], m["problem"]) for m in json.loads(proc.stdout)["mismatches"]]


def test_uv_pip_compile_universal_with_hashes_and_markers(venv, tmp_path):
    (tmp_path / "requirements.in").write_text("\n".join([*PINS, WIN_ONLY]) + "\n")
    tools.uv("pip", "compile", "--universal", "--generate-hashes", "-q", "requirements.in",
             "-o", "requirements.txt", cwd=tmp_path)
    text = (tmp_path / "requirements.txt").read_text()
    assert "sys_platform == 'win32'" in text and "--hash=sha256:" in text and "\\\n" in text
    ok = verify(tmp_path / "requirements.txt", venv, "--json")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert json.loads(ok.stdout)["checked"] == 3  # colorama is not for linux


def test_uv_export_of_a_project(venv, tmp_path):
    deps = ", ".join(f'"{p}"' for p in [*PINS, WIN_ONLY.replace('"', "'")])
    (tmp_path / "pyproject.toml").write_text(
        f'[project]\nname = "exported"\nversion = "0.1"\nrequires-python = ">=3.11"\n'
        f"dependencies = [{deps}]\n"
        '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n'
    )  # a packaged project: uv export emits `-e .` for it
    tools.uv("lock", "-q", cwd=tmp_path)
    tools.uv("export", "-q", "--no-emit-project", "-o", "requirements.txt", cwd=tmp_path)
    assert verify(tmp_path / "requirements.txt", venv).returncode == 0
    tools.uv("export", "-q", "-o", "with-project.txt", cwd=tmp_path)
    assert "-e ." in (tmp_path / "with-project.txt").read_text()
    p = verify(tmp_path / "with-project.txt", venv, "--json")
    assert p.returncode == 1 and mismatches(p) == [("exported", "missing")]


def test_pip_freeze_output(venv, tmp_path):
    freeze = subprocess.run([tools.tool("pip"), "--python", str(venv / "bin/python"), "freeze",
                             "--all"], capture_output=True, text=True, check=True).stdout
    (tmp_path / "requirements.txt").write_text(freeze)
    assert verify(tmp_path / "requirements.txt", venv).returncode == 0


def test_includes_options_markers_and_arbitrary_equality(venv, tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "base.txt").write_text("-c ../constraints.txt\nidna==3.10\n")
    (tmp_path / "constraints.txt").write_text("certifi==2024.8.30\nsix==1.16.0\n")
    (tmp_path / "requirements.txt").write_text(
        "--index-url https://pypi.org/simple\n--extra-index-url=https://example.invalid/simple\n"
        "-f ./wheels\n--prefer-binary\n-r sub/base.txt\n"
        "# MarkupSafe with arbitrary equality\nMarkupSafe===3.0.2\n"
        "six==1.16.0  # a trailing comment\n"
        'pywin32==306 ; sys_platform == "win32"\n'
    )
    p = verify(tmp_path / "requirements.txt", venv, "--json")
    assert p.returncode == 0, p.stdout + p.stderr
    lock = read_requirements(tmp_path / "requirements.txt")
    assert [(x.name, x.version) for x in lock.packages] == [
        ("idna", "3.10"), ("markupsafe", "3.0.2"), ("six", "1.16.0"), ("pywin32", "306")]
    assert lock.packages[1].arbitrary
    (tmp_path / "requirements.txt").write_text("MarkupSafe===3.0.2.0\nsix==1.16.0\nidna==3.10\n")
    p = verify(tmp_path / "requirements.txt", venv, "--json")
    assert mismatches(p) == [("markupsafe", "version")]  # === compares the text


def test_messages_cite_the_original_line(venv, tmp_path):
    req = tmp_path / "requirements.txt"
    req.write_text("six==1.16.0 \\\n    --hash=sha256:" + "0" * 64 + " \\\n"
                   "    --hash=sha256:" + "1" * 64 + "\nidna>=3\n")
    err = assert_one_line_error(verify(req, venv))
    assert f"{req}:4:" in err and "exact pin" in err
    (tmp_path / "base.txt").write_text("\n\nsix=1.16\n")
    req.write_text("idna==3.10\n-r base.txt\n")
    err = assert_one_line_error(verify(req, venv))
    assert f"{tmp_path / 'base.txt'}:3:" in err


@pytest.mark.parametrize("text, words", [
    ("-r missing.txt\n", "no such file"),
    ("--frobnicate\n", "not one pip accepts"),
    ("six==1.16.0 --frobnicate\n", "not one pip accepts"),
    ("-r requirements.txt\n", "included from itself"),
    ("-e ./nowhere\n", "no #egg= name"),
])
def test_bad_requirement_files_are_one_line_errors(venv, tmp_path, text, words):
    req = tmp_path / "requirements.txt"
    req.write_text(text)
    assert words in assert_one_line_error(verify(req, venv))
