"""Helpers for the run-store, exec and gate tests: the real `prov` of this venv, own store.

Every test gets its own store ($PROV_STORE); the snapshot cache ($PROV_CACHE_DIR) is shared
by the session so only the first `prov exec` pays for a cold snapshot.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent
PROV = str(BIN / "prov")
PYTHON = sys.executable


@pytest.fixture(scope="session")
def prov_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("prov-cache")


def prov_env(store: Path, cache: Path) -> dict[str, str]:
    """Environment for `prov`: the store `store`, the snapshot cache `cache`, wide tables."""
    env = dict(os.environ)
    env.update(
        {
            "PROV_STORE": str(store),
            "PROV_CACHE_DIR": str(cache),
            "COLUMNS": "250",
            "PROV_NO_PYPROJECT": "1",
        }
    )
    return env


@pytest.fixture
def penv(tmp_path, prov_cache) -> dict[str, str]:
    """Environment for `prov`: a fresh store, the session's snapshot cache, wide tables."""
    return prov_env(tmp_path / "store", prov_cache)


def prov(
    *args: str,
    env: dict[str, str],
    cwd: str | Path | None = None,
    input: bytes | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [PROV, *args],
        env=env,
        cwd=cwd,
        input=input,
        stdin=None if input is not None else subprocess.DEVNULL,
        capture_output=True,
        timeout=timeout,
    )


def runs_json(env: dict[str, str]) -> list[dict]:
    p = prov("runs", "--json", "--limit", "0", env=env)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def show_json(run: str, env: dict[str, str]) -> dict:
    p = prov("show", run, "--json", env=env)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def last_run(env: dict[str, str]) -> dict:
    runs = runs_json(env)
    assert runs, "no run recorded"
    return show_json(runs[0]["run_id"], env)
