"""vLLM: the engine configuration as the engine objects hold it, in the process that runs
the model (the engine core or a worker; the main process with
VLLM_ENABLE_V1_MULTIPROCESSING=0), never from argv.

When `vllm.v1.worker.gpu_model_runner` (the V1 runner; the CPU runner is a subclass) or
`vllm.v1.worker.gpu.model_runner` (V2, vLLM's default for dense models on CUDA) has
loaded, its `GPUModelRunner.__init__` is wrapped to keep a weak reference to each model
runner; after the most
derived class's `initialize_kv_cache` (attention groups exist from then on) and at exit,
each live runner is read: model, revision, tokenizer, dtype, quantization, max_model_len,
seed, enforce_eager, logprobs_mode, the KV cache (dtype requested and as allocated, block
size, prefix caching, the k/v scales of the attention layers), the scheduler's chunked
prefill budget, TP/PP/DP sizes, the compilation config, the attention backend per layer
class as instantiated (its impl and FlashAttention version) with the one requested, the
quantization config and each linear layer class's method, scheme and kernel, and the model
runner class that ran (V1 or V2). Every VLLM_* variable is read
through vLLM's own `envs`.
"""

import sys
import weakref

RUNNER_MODULES = ("vllm.v1.worker.gpu_model_runner", "vllm.v1.worker.gpu.model_runner")


def _get(obj, path):
    for name in path.split("."):
        obj = getattr(obj, name)
    return obj


def _text(value):
    text = "none" if value is None else str(value)
    return text[len("torch."):] if text.startswith("torch.") else text


def _fields(cfg, names):
    out = {}
    for key, path in names:
        try:
            out[key] = _text(_get(cfg, path))
        except Exception as exc:
            out[key] = "unavailable: %s" % type(exc).__name__
    return out


CONFIG = (
    ("model", "model_config.model"), ("revision", "model_config.revision"),
    ("tokenizer", "model_config.tokenizer"),
    ("tokenizer_revision", "model_config.tokenizer_revision"),
    ("dtype", "model_config.dtype"),
    ("max_model_len", "model_config.max_model_len"), ("seed", "model_config.seed"),
    ("enforce_eager", "model_config.enforce_eager"),
    ("logprobs_mode", "model_config.logprobs_mode"),
    ("block_size", "cache_config.block_size"),
    ("enable_prefix_caching", "cache_config.enable_prefix_caching"),
    ("kv_cache_dtype_skip_layers", "cache_config.kv_cache_dtype_skip_layers"),
    ("mamba_cache_dtype", "cache_config.mamba_cache_dtype"),
    ("mamba_ssm_cache_dtype", "cache_config.mamba_ssm_cache_dtype"),
    ("chunked_prefill", "scheduler_config.enable_chunked_prefill"),
    ("max_num_batched_tokens", "scheduler_config.max_num_batched_tokens"),
    ("max_num_seqs", "scheduler_config.max_num_seqs"),
    ("tensor_parallel_size", "parallel_config.tensor_parallel_size"),
    ("pipeline_parallel_size", "parallel_config.pipeline_parallel_size"),
    ("data_parallel_size", "parallel_config.data_parallel_size"),
    ("compilation_mode", "compilation_config.mode"),
    ("compilation_backend", "compilation_config.backend"),
    ("cudagraph_mode", "compilation_config.cudagraph_mode"),
)


def _backend_name(backend):
    try:
        return str(backend.get_name())
    except Exception:
        return getattr(backend, "__name__", str(backend))


def _layer_row(ag, first, name):
    impl = getattr(first, "impl", None)
    return {"backend": name, "impl": type(impl).__name__ if impl is not None else "none",
            "flash_attn_version": _text(getattr(impl, "vllm_flash_attn_version", None)),
            "kv_cache_dtype": _text(getattr(first, "kv_cache_dtype", None)),
            "tensor_dtype": _text(getattr(ag.kv_cache_spec, "dtype", None)),
            "spec": type(ag.kv_cache_spec).__name__}


def _join(rows, key):
    return ",".join(sorted({str(r[key]) for r in rows})) or "none"


def _attention(runner, cfg):
    """Backends per layer class, as the runner's attention groups hold them: the backend,
    its impl and FlashAttention version, the KV-cache dtype the layer holds and the tensor
    dtype the cache was allocated in (fp8 and int4 caches are both uint8 tensors)."""
    context = getattr(getattr(cfg, "compilation_config", None), "static_forward_context", {})
    by_kind = {}
    for group in getattr(runner, "attn_groups", None) or []:
        for ag in group:
            name = _backend_name(ag.backend)
            first = context.get(ag.layer_names[0]) if ag.layer_names else None
            for layer in ag.layer_names:
                kind = type(context.get(layer)).__name__ if layer in context else "unknown"
                row = by_kind.setdefault(kind, {"rows": [], "count": 0})
                row["rows"].append(_layer_row(ag, first, name))
                row["count"] += 1
    layers = {kind: {**{k: _join(v["rows"], k) for k in v["rows"][0]}, "count": v["count"]}
              for kind, v in sorted(by_kind.items())}
    rows = [r for v in by_kind.values() for r in v["rows"]]
    requested = cfg.attention_config.backend if hasattr(cfg, "attention_config") else None
    fa = sorted({r["flash_attn_version"] for r in rows} - {"none"})
    backend = {"requested": _text(getattr(requested, "name", requested) or "auto"),
               "resolved": _join(rows, "backend") if rows else "none",
               "flash_attn_version": ",".join(fa) or "none",
               "layers": layers}
    kv = {"requested": _text(getattr(cfg.cache_config, "cache_dtype", None)),
          "resolved": _join(rows, "tensor_dtype") if rows else "none"}
    kv.update(_scales(context))
    return backend, kv


def _scales(context):
    """The k/v scales the attention layers hold (1.0 unless a checkpoint or a calibration
    set them), as the distinct values seen, and whether vLLM computes them at run time."""
    held = [m for m in context.values() if hasattr(m, "_k_scale_float")]
    scales = sorted({"%r/%r" % (float(m._k_scale_float), float(m._v_scale_float))
                     for m in held})
    calc = sorted({str(bool(getattr(m, "calculate_kv_scales", False))) for m in held})
    return {"scales": ",".join(scales[:8]) + (",..." if len(scales) > 8 else "") or "none",
            "calculate_kv_scales": ",".join(calc) or "none"}


def _linear_row(module):
    """(method, scheme, kernel) of one layer's quantization; None for a layer holding no
    weight of its own (AWQ and GPTQ layers hold qweight, compressed-tensors weight_packed)."""
    method = getattr(module, "quant_method", None)
    if method is None or not any(hasattr(module, a)
                                 for a in ("weight", "weight_packed", "qweight")):
        return None
    scheme = getattr(module, "scheme", None)
    kernel = next((getattr(o, a) for o in (method, scheme) if o is not None
                   for a in ("fp8_linear", "kernel") if hasattr(o, a)), None)
    return (type(method).__name__, type(scheme).__name__ if scheme is not None else "none",
            type(kernel).__name__ if kernel is not None else "none")


def _quantization(runner, cfg):
    """The quantization config, and per linear layer class its method, scheme and kernel
    ("Selected CutlassFP8ScaledMMLinearKernel for Fp8PerTensorOnlineLinearMethod")."""
    model = runner.get_model() if hasattr(runner, "get_model") else runner.model
    linear = {}
    for _, module in model.named_modules():
        row = _linear_row(module)
        if row is not None:
            linear.setdefault(type(module).__name__, set()).add(row)
    quant_config = getattr(cfg, "quant_config", None)
    return {"resolved": _text(cfg.model_config.quantization),
            "config": type(quant_config).__name__ if quant_config is not None else "none",
            "linear": {cls: {k: ",".join(sorted({r[i] for r in rows}))
                             for i, k in enumerate(("method", "scheme", "kernel"))}
                       for cls, rows in sorted(linear.items())}}


def _model_runner(runner, cfg):
    """The model runner class that ran: V1 and V2 give different bits for one backend."""
    cls = type(runner)
    v2 = cls.__module__.startswith("vllm.v1.worker.gpu.")
    return {"version": "v2" if v2 else "v1", "class": cls.__module__ + "." + cls.__qualname__,
            "use_v2_model_runner": _text(getattr(cfg, "use_v2_model_runner", None))}


def _guarded(out, key, fn, *args):
    try:
        out[key] = fn(*args)
    except Exception as exc:  # one fact lost, never the others
        out[key] = "unavailable: %s: %s" % (type(exc).__name__, str(exc)[:200])


def runner_facts(runner):
    cfg = runner.vllm_config
    out = _fields(cfg, CONFIG)
    out["attention_backend"], out["kv_cache_dtype"] = _attention(runner, cfg)
    _guarded(out, "quantization", _quantization, runner, cfg)
    _guarded(out, "model_runner", _model_runner, runner, cfg)
    return out


def vllm_envs():
    envs = sys.modules.get("vllm.envs")
    names = getattr(envs, "environment_variables", None) or {}
    out = {}
    for name in sorted(names):
        try:
            out[name] = _text(getattr(envs, name))
        except Exception as exc:
            out[name] = "unavailable: %s" % type(exc).__name__
    return out


def _keep_resolved(before, now):
    """vLLM's own atexit shutdown frees the attention groups (and may free the model)
    before ours runs: a read that finds none keeps what the read after the KV cache was set
    up found."""
    if before is None:
        return now
    for key in ("attention_backend", "kv_cache_dtype"):
        if now[key]["resolved"] == "none":
            now[key] = before[key]
    for key in ("quantization", "model_runner"):
        if not isinstance(now.get(key), dict) and isinstance(before.get(key), dict):
            now[key] = before[key]
    return now


class Watcher:
    def __init__(self, probe):
        self.probe = probe
        self.runners = []
        self.wrapped = set()

    def on_module(self, name, module):
        if name in RUNNER_MODULES:
            self._wrap_init(module.GPUModelRunner)

    def _wrap_init(self, cls):
        import functools  # loaded already by the library it wraps
        original = cls.__init__
        watcher = self

        def __init__(runner, *args, **kwargs):
            original(runner, *args, **kwargs)
            watcher.probe.guarded("vllm runner", watcher._note, runner)

        functools.update_wrapper(__init__, original, updated=())
        __init__.prov_probe = True  # (vLLM's own decorators set __wrapped__ too)
        cls.__init__ = __init__

    def _note(self, runner):
        import functools  # loaded already by the library it wraps
        self.runners.append([weakref.ref(runner), None])  # [ref, facts last read]
        cls = type(runner)
        if cls in self.wrapped or "initialize_kv_cache" not in cls.__dict__:
            return
        self.wrapped.add(cls)
        original = cls.__dict__["initialize_kv_cache"]
        watcher = self

        def initialize_kv_cache(runner_, *args, **kwargs):
            result = original(runner_, *args, **kwargs)
            watcher.probe.guarded("vllm kv cache", watcher.save)
            return result

        functools.update_wrapper(initialize_kv_cache, original, updated=())
        cls.initialize_kv_cache = initialize_kv_cache

    def facts(self):
        """Live runners read now; a runner already gone keeps what was last read."""
        for held in self.runners:
            runner = held[0]()
            if runner is not None:
                held[1] = _keep_resolved(held[1], runner_facts(runner))
        return {"runners": [f for _, f in self.runners if f is not None],
                "envs": vllm_envs()}

    def save(self):
        """The engine is ready to serve: its facts, and what it imported and mapped so far
        (a server's engine core is force-killed by its parent on shutdown: no exit seen)."""
        self.probe.record.facts["vllm"] = self.facts()
        self.probe.note_loaded()
        self.probe.save("vllm kv cache")
