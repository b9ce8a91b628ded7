"""`prov verify --lock requirements.txt` on files written by the real `uv pip compile`,
`uv export` and `pip freeze`, and on pip's own syntax (includes, options, markers, `===`,
continuations); a requirements file constrains what it names, and names the whole
environment only when pinned with hashes throughout (pip's hash-checking mode)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from lockfiles.requirements import read_requirements
from tests import installer_tools as tools
from tests.helpers import assert_one_line_error, run_prov
from tests.lockfiles.wheel_index import build_wheel, sha256

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]  # not in make test-fast
PINS = ["six==1.16.0", "idna==3.10", "markupsafe==3.0.2"]
WIN_ONLY = 'colorama==0.4.6 ; sys_platform == "win32"'


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("reqenv") / "venv"
    python = tools.new_venv(root)
    tools.uv_install(python, *PINS)  # beside the venv's own pip and setuptools
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
    assert json.loads(ok.stdout)["exact"] is True  # hashed throughout: a full pin set
    (tmp_path / "requirements.in").write_text("six==1.16.0\nidna==3.10\n")
    tools.uv("pip", "compile", "--generate-hashes", "-q", "requirements.in",
             "-o", "two.txt", cwd=tmp_path)
    p = verify(tmp_path / "two.txt", venv, "--json")  # it says: this is the environment
    assert p.returncode == 1 and mismatches(p) == [("markupsafe", "extra")]


def test_uv_export_of_a_project(venv, tmp_path):
    deps = ", ".join(f'"{p}"' for p in [*PINS, WIN_ONLY.replace('"', "'")])
    (tmp_path / "pyproject.toml").write_text(
        f'[project]\nname = "exported"\nversion = "0.1"\nrequires-python = ">=3.11"\n'
        f"dependencies = [{deps}]\n"
        '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n'
    )  # a packaged project: uv export emits `-e .` for it
    tools.uv("lock", "-q", cwd=tmp_path)
    tools.uv("export", "-q", "--no-emit-project", "-o", "requirements.txt", cwd=tmp_path)
    p = verify(tmp_path / "requirements.txt", venv, "--json")
    assert p.returncode == 0 and json.loads(p.stdout)["exact"] is True
    tools.uv("export", "-q", "-o", "with-project.txt", cwd=tmp_path)
    assert "-e ." in (tmp_path / "with-project.txt").read_text()
    p = verify(tmp_path / "with-project.txt", venv, "--json")
    assert p.returncode == 1 and mismatches(p) == [("exported", "missing")]


def test_pip_freeze_output(venv, tmp_path):
    freeze = subprocess.run([tools.tool("pip"), "--python", str(venv / "bin/python"), "freeze",
                             "--all"], capture_output=True, text=True, check=True).stdout
    (tmp_path / "requirements.txt").write_text(freeze)
    p = verify(tmp_path / "requirements.txt", venv, "--json")
    assert p.returncode == 0 and json.loads(p.stdout)["exact"] is False  # no hashes


def test_a_requirements_file_constrains_what_it_names(venv, tmp_path):
    req = tmp_path / "requirements.txt"
    req.write_text("six==1.16.0\nidna>=3\n")  # two lines, written by hand
    p = verify(req, venv, "--json")
    assert p.returncode == 0, p.stdout + p.stderr
    report = json.loads(p.stdout)
    assert (report["checked"], report["exact"], report["mismatches"]) == (2, False, [])
    assert report["extras"] == [{"package": "markupsafe", "installed": "3.0.2"}]
    text = verify(req, venv)
    assert text.returncode == 0
    assert text.stdout.splitlines() == [
        "not in the lock, ignored as installer tooling: pip, setuptools",
        "1 installed package(s) not named by requirements.txt, not checked (a requirements "
        "file constrains only what it names; --exact fails on them): markupsafe 3.0.2",
        "ok: 2 locked packages match (requirements by requirements.txt)"]
    p = verify(req, venv, "--exact", "--json")
    assert p.returncode == 1 and mismatches(p) == [("markupsafe", "extra")]
    req.write_text("six==1.16.0\nidna<3\nmarkupsafe\n")  # a range the installed one misses
    p = verify(req, venv, "--json")
    assert p.returncode == 1
    assert [(m["package"], m["problem"], m["locked"]) for m in json.loads(p.stdout)[
        "mismatches"]] == [("idna", "version", "<3")]


def test_hashes_throughout_mean_the_whole_environment_to_pip(tmp_path):
    """The rule's oracle: in hash-checking mode pip installs nothing the file does not pin
    with a hash, dependencies included, so a file pinned with hashes names a whole
    environment."""
    top = build_wheel(tmp_path / "wheels", "provtop", "1.0", "TOP = 1\n",
                      requires=["provtiny==1.0"])
    tiny = build_wheel(tmp_path / "wheels", "provtiny", "1.0", "TINY = 1\n")
    req = tmp_path / "requirements.txt"

    def pip_dry_run() -> subprocess.CompletedProcess:
        return subprocess.run(
            [tools.tool("pip"), "install", "--isolated", "--dry-run", "--no-index",
             "--find-links", str(tmp_path / "wheels"), "-r", str(req)],
            capture_output=True, text=True)

    req.write_text(f"provtop==1.0 --hash=sha256:{sha256(top)}\n")
    p = pip_dry_run()
    assert p.returncode != 0 and "Hashes are required in --require-hashes mode" in p.stderr
    assert "provtiny==1.0 --hash=sha256:" in p.stderr  # the unlisted dependency: refused
    req.write_text(f"provtop==1.0 --hash=sha256:{sha256(top)}\n"
                   f"provtiny==1.0 --hash=sha256:{sha256(tiny)}\n")
    assert pip_dry_run().returncode == 0
    assert read_requirements(req).exact
    req.write_text(f"provtop==1.0 --hash=sha256:{sha256(top)}\nprovtiny==1.0\n")
    assert not read_requirements(req).exact


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
                   "    --hash=sha256:" + "1" * 64 + "\nidna>=>3\n")
    err = assert_one_line_error(verify(req, venv))
    assert f"{req}:4:" in err and "not a valid requirement" in err
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
