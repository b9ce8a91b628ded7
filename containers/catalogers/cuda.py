"""The CUDA stack: `/usr/local/cuda*/version.json`, and cuDNN/NCCL/cuBLAS/cudart versions
from their library file names (`libcudnn.so.9.1.0`) wherever they are installed."""

from __future__ import annotations

import re

from containers.jsondoc import load_content

LIBRARY = re.compile(
    r"^lib(cudnn|nccl|cublas|cudart|cublasLt|cusparse|cufft)\.so\.(\d+(?:\.\d+)*)$"
)


def parse_version_json(text: str) -> dict[str, str]:
    """`cuda` and component versions from a toolkit's version.json (empty if malformed)."""
    doc = load_content(text)
    if not isinstance(doc, dict):
        return {}
    out: dict[str, str] = {}
    for key, value in doc.items():
        if isinstance(value, dict) and isinstance(value.get("version"), str):
            out[str(key)] = value["version"]
    return out


def library_version(basename: str) -> tuple[str, str] | None:
    """(library, version) for a versioned shared-object name, else None."""
    m = LIBRARY.match(basename)
    if not m:
        return None
    return m.group(1).lower(), m.group(2)
