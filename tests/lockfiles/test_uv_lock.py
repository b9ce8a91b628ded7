"""`prov verify --lock uv.lock` against locks written by the real `uv lock`, with `uv sync`
as the oracle of what the lock means for this platform: a virtual workspace root, a member
installed editable through an extra, a win32-only dependency, a dev group and an unused
extra and group."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from lockfiles.read import read_lock
from lockfiles.uv_lock import reachable
from lockfiles.verify_env import marker_environment
from provenance.model import Manifest
from tests import installer_tools as tools
from tests.helpers import run_prov

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]  # not in make test-fast

ROOT = """[project]
name = "ws-root"
version = "0.1.0"
requires-python = ">=3.11"
dependencies = ["member-b[cli]", "colorama==0.4.6; sys_platform == 'win32'",
                "markupsafe==3.0.2"]
[project.optional-dependencies]
docs = ["certifi==2024.8.30"]
[dependency-groups]
dev = ["idna==3.10"]
lint = ["certifi==2024.8.30"]
[tool.uv.workspace]
members = ["packages/*"]
[tool.uv.sources]
member-b = { workspace = true }
"""
MEMBER = """[project]
name = "member-b"
version = "0.2.0"
requires-python = ">=3.11"
[project.optional-dependencies]
cli = ["six==1.16.0; python_version >= '3.8'"]
[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"
"""


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("ws")
    (root / "pyproject.toml").write_text(ROOT)
    member = root / "packages" / "member-b"
    (member / "src" / "member_b").mkdir(parents=True)
    (member / "src" / "member_b" / "__init__.py").write_text("")
    (member / "pyproject.toml").write_text(MEMBER)
    tools.uv("lock", "-q", cwd=root)
    tools.uv("sync", "-q", cwd=root)  # its .venv is the oracle environment
    return root


def installed(venv: Path) -> set[str]:
    out = subprocess.run([tools.tool("pip"), "--python", str(venv / "bin/python"), "list",
                          "--format", "json"], capture_output=True, text=True, check=True).stdout
    return {p["name"].lower().replace("_", "-") for p in json.loads(out)}


def test_the_lock_really_holds_the_conditional_parts(workspace):
    text = (workspace / "uv.lock").read_text()
    assert 'source = { virtual = "." }' in text
    assert "sys_platform == 'win32'" in text and 'name = "colorama"' in text
    assert 'name = "certifi"' in text  # only behind an extra and a non-default group


def test_reachable_set_equals_what_uv_sync_installed(workspace):
    import platform

    manifest = Manifest({"python": {"implementation": "cpython",
                                    "version": platform.python_version()},
                         "os": {"system": platform.system(), "machine": platform.machine()}})
    lock = read_lock(workspace / "uv.lock")
    got = {p.name for p in reachable(workspace / "uv.lock", _data(workspace), marker_environment(
        manifest))}
    assert got == installed(workspace / ".venv") == {"markupsafe", "member-b", "six", "idna"}
    assert "ws-root" not in {p.name for p in lock.packages}  # virtual: never installed


def test_verify_accepts_the_synced_environment(workspace):
    p = run_prov("verify", "--lock", str(workspace / "uv.lock"), "--python",
                 str(workspace / ".venv" / "bin" / "python"), "--json")
    assert p.returncode == 0, p.stdout + p.stderr
    assert json.loads(p.stdout)["checked"] == 4


def test_verify_names_what_uv_sync_would_add(workspace, tmp_path):
    venv = tmp_path / "partial"
    python = tools.new_venv(venv)
    tools.uv_install(python, "markupsafe==3.0.2", "six==1.16.0", "certifi==2024.8.30")
    p = run_prov("verify", "--lock", str(workspace / "uv.lock"), "--python", python, "--json")
    assert p.returncode == 1
    problems = {(m["package"], m["problem"]) for m in json.loads(p.stdout)["mismatches"]}
    assert problems == {("idna", "missing"), ("member-b", "missing"), ("certifi", "extra")}


def _data(workspace: Path) -> dict:
    import tomllib

    return tomllib.loads((workspace / "uv.lock").read_text())
