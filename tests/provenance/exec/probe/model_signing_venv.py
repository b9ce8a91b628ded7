"""A cached scratch venv with OpenSSF model-signing: the oracle for model-file digests.

Built once from PyPI by tests/cached_venv.py. It stays out of the main venv:
the test runs it as a separate interpreter.
"""

from __future__ import annotations

from pathlib import Path

from tests.cached_venv import CACHE, cached_venv

VERSIONS = ["model-signing==1.1.1", "pyopenssl==26.4.0"]  # model-signing imports OpenSSL
VENV = CACHE / "model-signing-venv"


def model_signing_python() -> Path:
    return cached_venv(VENV.name, [["pip", "install", "-q", *VERSIONS]],
                       "import model_signing.hashing", "\n".join(VERSIONS) + "\n")
