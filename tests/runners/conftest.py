"""Fixtures: the demo model (built by project code, cached outside the repo) and its text."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CACHE = Path(os.environ.get("PROV_TEST_CACHE", Path.home() / ".cache" / "prov-tests"))


@pytest.fixture(scope="session")
def demo_model() -> Path:
    from runners.demo.build import ensure

    return ensure(CACHE / "demo-model", steps=120)


@pytest.fixture(scope="session")
def prepared(demo_model):
    from runners.prepare import prepare

    return prepare(demo_model, demo_model / "eval.txt", 384)


@pytest.fixture(scope="session")
def vllm_python() -> Path:
    from tests.runners.vllm_venv import vllm_python as build

    return build()


@pytest.fixture(scope="session")
def replay_model() -> Path:
    """A tiny model trained (in a child process: no torch in pytest) to memorise the bundled
    workstream; cached under the test cache by recipe and workstream digest."""
    import subprocess
    import sys

    out = CACHE / "replay-model"
    code = ("import sys; from runners.workstream import EXAMPLES; "
            "from runners.workstream.demo_model import ensure; "
            "ensure(sys.argv[1], EXAMPLES + '/file_agent.json')")
    subprocess.run([sys.executable, "-c", code, str(out)], check=True, timeout=600)
    return out
