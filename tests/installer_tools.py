"""Real installers (pip, uv, pdm) from PyPI, built once into a cached scratch venv.

Tests of what installers write (fingerprints, RECORD rows, locks written by `uv lock`,
`uv export`, `pip lock`) use the tools themselves, not imitations. The tools venv is built
by tests/cached_venv.py, so an interrupted build is redone, and parallel test processes build
it once. Wheels the tests
install are downloaded once into the same cache; after that only index look-ups by uv and
pdm need the network (PyPI).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.cached_venv import CACHE, cached_venv

TOOLS = CACHE / "installer-tools-v1"
WHEELS = CACHE / "installer-wheels"
# Pinned so a test's expectations do not move with a release. pdm 2.29 breaks with hishel 2
# (`hishel.SyncSqliteStorage` is gone), so hishel is pinned to the series pdm was built on.
PINS = ["pip==26.3", "uv==0.13.9", "pdm==2.29.4", "hishel[httpx2]==1.4.0"]


def _base_python() -> str:
    return shutil.which("python3") or sys.executable


def tools_bin() -> Path:
    """The bin/ directory holding pip, uv and pdm, building the venv first if needed."""
    steps = [["pip", "install", "-q", "-U", "pip"], ["pip", "install", "-q", *PINS]]
    python = cached_venv(TOOLS.name, steps, "import pip", "\n".join(PINS) + "\n",
                         base=_base_python())
    return python.parent


def tool(name: str) -> str:
    return str(tools_bin() / name)


def wheel(requirement: str) -> Path:
    """A wheel from PyPI for this interpreter (`name==version`), downloaded once."""
    name, _, version = requirement.partition("==")
    stem = name.replace("-", "_").lower()
    WHEELS.mkdir(parents=True, exist_ok=True)
    with open(CACHE / "installer-wheels.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = sorted(WHEELS.glob(f"{stem}-{version}-*.whl"))
        if not found:
            subprocess.run(
                [tool("python"), "-m", "pip", "download", "-q", "--no-deps", "--only-binary",
                 ":all:", "-d", str(WHEELS), requirement],
                check=True,
            )
            found = sorted(WHEELS.glob(f"{stem}-{version}-*.whl"))
    assert found, f"pip download {requirement} left no wheel in {WHEELS}"
    return found[0]


def new_venv(path: Path) -> str:
    """A fresh venv (with pip) at `path`; returns its interpreter."""
    subprocess.run([_base_python(), "-m", "venv", str(path)], check=True)
    return str(path / "bin" / "python")


def pip_install(python: str, *args: str) -> None:
    subprocess.run([python, "-m", "pip", "install", "-q", *args], check=True,
                   stdin=subprocess.DEVNULL)


def uv_install(python: str, *args: str) -> None:
    subprocess.run([tool("uv"), "pip", "install", "-q", "--python", python, *args], check=True,
                   env=_uv_env(), stdin=subprocess.DEVNULL)


def _uv_env() -> dict[str, str]:
    return dict(os.environ, UV_CACHE_DIR=str(CACHE / "uv-cache"), UV_NO_PROGRESS="1")


def uv(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """Run `uv ARGS` in `cwd`; a failure raises with uv's own message."""
    proc = subprocess.run([tool("uv"), *args], cwd=cwd, capture_output=True, text=True,
                          env=_uv_env(), stdin=subprocess.DEVNULL, timeout=600)
    if proc.returncode != 0:
        raise AssertionError(f"uv {' '.join(args)} failed: {proc.stderr}")
    return proc


def pdm_install(python: str, project: Path, requirements: list[str]) -> None:
    """Install `requirements` into `python`'s environment with pdm (a non-package project)."""
    project.mkdir(parents=True, exist_ok=True)
    deps = ", ".join(f'"{r}"' for r in requirements)
    series = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                            capture_output=True, text=True, check=True).stdout.strip()
    (project / "pyproject.toml").write_text(
        f'[project]\nname = "pdm-probe"\nversion = "0"\nrequires-python = "=={series}.*"\n'
        f"dependencies = [{deps}]\n[tool.pdm]\ndistribution = false\n"
    )
    env = dict(os.environ, PDM_CACHE_DIR=str(CACHE / "pdm-cache"), PDM_CHECK_UPDATE="false",
               PDM_HOME=str(CACHE / "pdm-home"), PDM_NON_INTERACTIVE="1")
    for args in (["use", "-q", "-f", python], ["install", "-q"]):
        proc = subprocess.run([tool("pdm"), *args], cwd=project, capture_output=True, text=True,
                              env=env, stdin=subprocess.DEVNULL, timeout=600)
        if proc.returncode != 0:
            raise AssertionError(f"pdm {' '.join(args)} failed: {proc.stdout}{proc.stderr}")


if __name__ == "__main__":
    print(tools_bin())
