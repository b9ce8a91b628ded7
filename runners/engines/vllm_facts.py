"""What a vLLM engine resolved, read from its own objects in this process (CPU and CUDA alike).

Everything comes from the model runner that ran (V1 `vllm.v1.worker.gpu_model_runner` or V2
`vllm.v1.worker.gpu.model_runner`; vLLM picks V2 for dense models and the two give different
bits for the same backend), its attention groups (one per KV-cache spec: the layer type), the
attention layers in the compilation config's forward context (their impl, FlashAttention
version, KV-cache dtype and scales), `cache_config.cache_dtype` (fp8 and int4 caches are
both `uint8` tensors, so the tensor alone cannot tell them apart), and the quantization
config with the kernel its first quantized linear layer chose. Keys are grouped so that one
gate preset covers each concept: attention_backend, kv_cache_dtype + kv_scales, quantization.
"""

from __future__ import annotations

from typing import Any

from runners.engines.base import EngineError


def _text(value: Any) -> str:
    return "none" if value is None else str(value).removeprefix("torch.")


def model_runner(llm):
    core = llm.llm_engine.engine_core
    inner = getattr(core, "engine_core", None)
    if inner is None:
        raise EngineError(
            "vLLM engine core is not in-process; set VLLM_ENABLE_V1_MULTIPROCESSING=0"
        )
    worker = inner.model_executor.driver_worker
    return getattr(worker, "worker", worker).model_runner


def runner_facts(runner, vllm_config) -> dict[str, str]:
    cls = type(runner)
    v2 = cls.__module__.startswith("vllm.v1.worker.gpu.")
    return {"version": "v2" if v2 else "v1", "class": f"{cls.__module__}.{cls.__qualname__}",
            "use_v2_model_runner": _text(getattr(vllm_config, "use_v2_model_runner", None))}


def _layer_groups(runner, context: dict) -> list[dict[str, Any]]:
    """One entry per attention group: the layer type, its backend, the first layer's impl."""
    groups = []
    for group in getattr(runner, "attn_groups", None) or []:
        for ag in group:
            first = context.get(ag.layer_names[0]) if ag.layer_names else None
            impl = getattr(first, "impl", None)
            groups.append({
                "layer_type": type(ag.kv_cache_spec).__name__, "layers": len(ag.layer_names),
                "backend": ag.backend.get_name(), "impl": type(impl).__name__,
                "flash_attn_version": _text(getattr(impl, "vllm_flash_attn_version", None)),
                "tensor_dtype": _text(getattr(ag.kv_cache_spec, "dtype", None)),
                "cache_dtype": _text(getattr(first, "kv_cache_dtype", None)),
            })
    if not groups:
        raise EngineError("vLLM engine reports no attention groups; cannot tell its backend")
    return groups


def _scales(context: dict) -> dict[str, str]:
    """The k/v scales the attention layers hold (1.0 unless a checkpoint or a calibration set
    them), as the distinct values seen, in scalars (a manifest leaf holds no nested lists)."""
    layers = [m for m in context.values() if hasattr(m, "_k_scale_float")]
    seen = sorted({f"{float(m._k_scale_float)!r}/{float(m._v_scale_float)!r}" for m in layers})
    calc = sorted({str(bool(getattr(m, "calculate_kv_scales", False))) for m in layers})
    return {"k_v": ",".join(seen) or "none", "calculate_kv_scales": ",".join(calc) or "none"}


def _linear_kernel(model) -> dict[str, str]:
    """The quant method and kernel of the first linear layer that has a non-default one."""
    for _, module in model.named_modules():
        method = getattr(module, "quant_method", None)
        if method is None or type(method).__name__.startswith("Unquantized"):
            continue
        # weight (fp8), weight_packed (compressed-tensors), qweight (AWQ, GPTQ)
        if not any(hasattr(module, a) for a in ("weight", "weight_packed", "qweight")):
            continue
        scheme = getattr(module, "scheme", None)
        kernel = next((getattr(o, a) for o in (method, scheme) if o is not None
                       for a in ("fp8_linear", "kernel") if hasattr(o, a)), None)
        return {"method": type(method).__name__,
                "scheme": type(scheme).__name__ if scheme is not None else "none",
                "kernel": type(kernel).__name__ if kernel is not None else "none"}
    return {"method": "UnquantizedLinearMethod", "scheme": "none", "kernel": "none"}


def engine_facts(llm, requested: dict[str, str]) -> dict[str, Any]:
    """attention_backend / kv_cache_dtype / kv_scales / quantization / model_runner, each with
    what was asked (`requested`) beside what the engine holds."""
    runner = model_runner(llm)
    cfg = llm.llm_engine.vllm_config
    context = getattr(cfg.compilation_config, "static_forward_context", {}) or {}
    groups = _layer_groups(runner, context)
    backends = sorted({g["backend"] for g in groups})
    fa = sorted({g["flash_attn_version"] for g in groups} - {"none"})
    by_type = {g["layer_type"]: g for g in groups}
    model = runner.get_model() if hasattr(runner, "get_model") else runner.model
    return {
        "attention_backend": {
            "requested": requested["attention_backend"], "resolved": ",".join(backends),
            "flash_attn_version": ",".join(map(str, fa)) or "none",
            "layers": {t: {k: g[k] for k in ("backend", "impl", "layers", "flash_attn_version")}
                       for t, g in by_type.items()}},
        "kv_cache_dtype": {
            "requested": requested["kv_cache_dtype"],
            "cache_config": _text(cfg.cache_config.cache_dtype),
            "resolved": ",".join(sorted({g["tensor_dtype"] for g in groups})),
            "layers": {t: {k: g[k] for k in ("cache_dtype", "tensor_dtype")}
                       for t, g in by_type.items()}},
        "kv_scales": _scales(context),
        "quantization": {
            "requested": requested["quantization"],
            "resolved": _text(cfg.model_config.quantization),
            "config": type(cfg.quant_config).__name__ if cfg.quant_config else "none",
            "linear": _linear_kernel(model)},
        "model_runner": runner_facts(runner, cfg),
    }
