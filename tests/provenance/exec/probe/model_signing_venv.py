"""A cached scratch venv with OpenSSF model-signing: the oracle for model-file digests.

Built once under the test cache (a file lock; marked complete only at the end), from PyPI
with pip, as tests/runners/vllm_venv.py builds the vLLM one. It stays out of the main venv:
the test runs it as a separate interpreter.
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import sys
from pathlib import Path

from tests.runners.vllm_venv import CACHE

VERSIONS = ["model-signing==1.1.1", "pyopenssl==26.4.0"]  # model-signing imports OpenSSL
VENV = CACHE / "model-signing-venv"
MARKER = VENV / ".prov-complete"


def model_signing_python() -> Path:
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / "model-signing-venv.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if MARKER.exists():
            return VENV / "bin" / "python"
        if VENV.exists():
            shutil.rmtree(VENV)
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        py = str(VENV / "bin" / "python")
        subprocess.run([py, "-m", "pip", "install", "-q", *VERSIONS], check=True)
        subprocess.run([py, "-c", "import model_signing.hashing"], check=True)
        MARKER.write_text("\n".join(VERSIONS) + "\n")
        return VENV / "bin" / "python"
