"""The `env` section: variables that change numerics or behaviour, secrets redacted.

Only variables matching the prefixes and names below are recorded (not the whole
environment); any recorded value that looks like a credential is replaced by <redacted>.
"""

from __future__ import annotations

import os
from typing import Any

from provenance.model.redact import redact_value

PREFIXES = (
    "CUDA_",
    "ATEN_",  # ATEN_CPU_CAPABILITY picks torch's CPU kernel family
    "NCCL_",
    "TORCH_",
    "TORCHINDUCTOR_",
    "TORCHDYNAMO_",
    "PYTORCH_",
    "VLLM_",
    "CUBLAS_",
    "CUBLASLT_",
    "CUDNN_",
    "NVIDIA_",
    "NVTE_",
    "OMP_",
    "MKL_",
    "KMP_",
    "GOMP_",
    "OPENBLAS_",
    "ONEDNN_",
    "DNNL_",
    "HF_",
    "HUGGING_FACE_",
    "TRANSFORMERS_",
    "TOKENIZERS_",
    "TRITON_",
    "FLASHINFER_",
    "XLA_",
    "HIP_",
    "ROCM_",
    "HSA_",
    "UCX_",
    "FI_",
    "SGLANG_",
    "GGML_",
    "LLAMA_",
    "MALLOC_",
    "PIP_",
    "UV_",
    "CONDA_",
    "RAY_",
)
NAMES = frozenset(
    {
        "PYTHONHASHSEED",
        "PYTHONPATH",
        "PYTHONNOUSERSITE",
        "PYTHONOPTIMIZE",
        "LD_LIBRARY_PATH",
        "LD_PRELOAD",
        "VIRTUAL_ENV",
        "TZ",
        "LANG",
        "LC_ALL",
    }
)


def relevant(name: str) -> bool:
    return name in NAMES or name.startswith(PREFIXES)


def collect(warnings: list[str], environ: dict[str, str] | None = None,
            key: bytes | None = None) -> dict[str, Any]:
    """`key`: the store's redaction key (model.redact.store_key); with it a hidden value is
    a keyed digest, so two runs whose HF_TOKEN differs still differ in identity."""
    environ = dict(os.environ if environ is None else environ)
    return {
        name: redact_value(name, value, key)
        for name, value in sorted(environ.items()) if relevant(name)
    }
