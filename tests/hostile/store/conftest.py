"""Fixtures of the exec tests: a fresh store per test, a shared snapshot cache."""

from tests.exec_support import penv, prov_cache  # noqa: F401 - fixtures
