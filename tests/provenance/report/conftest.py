"""Fixtures: a synthetic 100k-position result (the demo model and a real divergence of it
are shared with the publish tests: tests/provenance/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def synthetic_100k(tmp_path_factory) -> Path:
    from tests.provenance.report.synthetic import synthetic_result

    return synthetic_result(tmp_path_factory.mktemp("report-100k") / "res")
