"""The gate's built-in presets: a concept, and every key where it can show up.

Engine adapters put what the engine resolved at run time under `runtime.<engine>.<concept>`
(e.g. `runtime.vllm.attention_backend.resolved`), declared parameters under
`run.params.<concept>`, and engines' static facts under `engines.<engine>.<concept>`.
`[tool.prov.presets]` in pyproject.toml adds presets or extends these (config.py).
"""

from __future__ import annotations

PRESETS: dict[str, tuple[str, ...]] = {
    "attention-backend": (
        "runtime.*.attention_backend",
        "runtime.attention_backend",
        "engines.*.attention_backend",
        "run.params.attention_backend",
        "env.VLLM_ATTENTION_BACKEND",
        "env.VLLM_USE_TRITON_FLASH_ATTN",
        "env.VLLM_FLASH_ATTN_VERSION",
        "env.SGLANG_ATTENTION_BACKEND",
    ),
    "kv-cache-dtype": (
        "runtime.*.kv_cache_dtype",
        "runtime.kv_cache_dtype",
        "engines.*.kv_cache_dtype",
        "run.params.kv_cache_dtype",
        "runtime.*.calculate_kv_scales",
        "env.VLLM_KV_CACHE_DTYPE",
    ),
    "weights": (
        "runtime.*.model",
        "runtime.*.weights",
        "runtime.model",
        "runtime.weights",
        "weights",
        "model",
        "run.params.model",
        "run.params.weights",
        "run.params.checkpoint",
    ),
    "dtype": (
        "runtime.*.dtype",
        "runtime.dtype",
        "engines.*.dtype",
        "run.params.dtype",
        "torch.flags.float32_matmul_precision",
    ),
    "threads": (
        "env.OMP_NUM_THREADS",
        "env.MKL_NUM_THREADS",
        "torch.num_threads",
        "torch.num_interop_threads",
        "runtime.torch.*threads*",
        "run.params.threads",
    ),
}
# Never worth refusing a comparison over; still listed in the record as ignored.
ALWAYS_IGNORED: tuple[str, ...] = ("env.PROV_*",)

