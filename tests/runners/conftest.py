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
