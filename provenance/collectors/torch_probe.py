"""The `torch` section: torch's build and default numerics flags, read in a subprocess.

Importing torch costs seconds and may touch the GPU, so it runs in a child of the target
interpreter under a hard timeout, and the answer is cached, keyed by everything it depends
on: the torch distribution's fingerprint, the interpreter, the NVIDIA driver and the
environment variables torch reads at start-up.

Flags are the defaults a fresh process gets; a workload can change them at run time, which
is why `prov exec` also samples the libraries a workload really loaded.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

PROBE = r"""
import json, sys
out = {}
def put(key, fn):
    try:
        v = fn()
    except Exception as exc:
        v = "unavailable: " + type(exc).__name__
    if v is None:
        v = "none"
    elif not isinstance(v, (bool, int, float, str, list)):
        v = str(v)
    out[key] = v
import torch
put("version", lambda: torch.__version__)
put("git_version", lambda: torch.version.git_version)
put("cuda_runtime", lambda: torch.version.cuda)
put("hip", lambda: torch.version.hip)
put("debug", lambda: torch.version.debug)
put("cuda_available", lambda: torch.cuda.is_available())
put("cuda_device_count", lambda: torch.cuda.device_count())
put("cuda_arch_list", lambda: torch.cuda.get_arch_list())
def cudnn_version():
    v = torch.backends.cudnn.version()
    if not v:
        return None
    # cuDNN 9 encodes major*10000 + minor*100 + patch; cuDNN 8 and older major*1000 + ...
    major, rest = (v // 10000, v % 10000) if v >= 90000 else (v // 1000, v % 1000)
    return f"{major}.{rest // 100}.{rest % 100}"
put("cudnn", cudnn_version)
put("nccl", lambda: ".".join(map(str, torch.cuda.nccl.version())) if torch.cuda.is_available() else None)
put("cpu_capability", lambda: torch.backends.cpu.get_cpu_capability())
put("mkldnn", lambda: torch.backends.mkldnn.is_available())
put("openmp", lambda: torch.backends.openmp.is_available())
put("num_threads", lambda: torch.get_num_threads())
put("num_interop_threads", lambda: torch.get_num_interop_threads())
put("flags.float32_matmul_precision", lambda: torch.get_float32_matmul_precision())
put("flags.cuda_matmul_allow_tf32", lambda: torch.backends.cuda.matmul.allow_tf32)
put("flags.cuda_matmul_allow_fp16_reduced_precision", lambda: torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction)
put("flags.cuda_matmul_allow_bf16_reduced_precision", lambda: torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction)
put("flags.cudnn_allow_tf32", lambda: torch.backends.cudnn.allow_tf32)
put("flags.cudnn_enabled", lambda: torch.backends.cudnn.enabled)
put("flags.cudnn_deterministic", lambda: torch.backends.cudnn.deterministic)
put("flags.cudnn_benchmark", lambda: torch.backends.cudnn.benchmark)
put("flags.deterministic_algorithms", lambda: torch.are_deterministic_algorithms_enabled())
put("flags.preferred_blas_library", lambda: str(torch.backends.cuda.preferred_blas_library()))
put("sdpa.flash", lambda: torch.backends.cuda.flash_sdp_enabled())
put("sdpa.mem_efficient", lambda: torch.backends.cuda.mem_efficient_sdp_enabled())
put("sdpa.math", lambda: torch.backends.cuda.math_sdp_enabled())
put("sdpa.cudnn", lambda: torch.backends.cuda.cudnn_sdp_enabled())
sys.stdout.write(json.dumps(out))
"""

_KEY_ENV_PREFIXES = (
    "TORCH_",
    "PYTORCH_",
    "CUDA_",
    "NVIDIA_",
    "CUBLAS_",
    "CUDNN_",
    "OMP_",
    "MKL_",
    "ATEN_",
)


def cache_dir() -> Path:
    from provenance.collectors.answer_cache import cache_root

    return Path(cache_root()) / "torch"


def cache_key(python: str, torch_fingerprint: str) -> str:
    env = sorted((k, v) for k, v in os.environ.items() if k.startswith(_KEY_ENV_PREFIXES))
    try:
        driver = Path("/proc/driver/nvidia/version").read_text()
    except OSError:
        driver = ""
    material = json.dumps([python, torch_fingerprint, env, driver, os.cpu_count()])
    return hashlib.sha256(material.encode()).hexdigest()


def _nest(flat: dict[str, Any]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for key, value in flat.items():
        *parents, last = key.split(".")
        node = tree
        for p in parents:
            node = node.setdefault(p, {})
        node[last] = value
    return tree


def collect(
    warnings: list[str],
    python: str | None = None,
    torch_fingerprint: str = "",
    timeout: float = 90.0,
) -> dict[str, Any]:
    python = python or sys.executable
    path = cache_dir() / f"{cache_key(python, torch_fingerprint)}.json"
    if torch_fingerprint and path.exists():
        try:
            section = json.loads(path.read_text())
            section["cache"] = "hit"
            return section
        except (OSError, ValueError):
            pass  # a damaged cache entry is recomputed
    import subprocess  # a cache hit (the usual case) needs neither this nor the writer

    try:
        proc = subprocess.run(
            [python, "-c", PROBE],
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return {"probe": f"unavailable: import torch timed out after {timeout:g} s"}
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"probe": f"unavailable: import torch failed: {last[:200]}"}
    section = _nest(json.loads(proc.stdout))
    if torch_fingerprint:
        from provenance.model.atomic import write_atomic

        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, json.dumps(section))
        except OSError as exc:
            warnings.append(f"torch: cannot write probe cache: {exc.strerror}")
    section["cache"] = "miss"
    return section
