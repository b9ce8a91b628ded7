"""torch's process-global numerics state, read inside the process that computes.

A script can change these after start-up (`torch.set_num_threads`, `torch.backends.*`,
`torch.set_flush_denormal`); nothing outside the process sees that. Read only when torch
is already imported (asking must never import it), and never through a call that changes
state: `get_num_interop_threads` does not start the pool, so a later
`set_num_interop_threads` still works. This is the one reader of a run's torch state
(`runtime.torch.flags.*`), prov's own workers' runs included. Standard library only,
Python 3.8+.
"""

import sys


def _put(out, key, fn):
    try:
        value = fn()
    except Exception as exc:  # a flag torch refuses to report is recorded, never fatal
        value = "unavailable: %s" % type(exc).__name__
    if value is None:
        value = "none"
    elif not isinstance(value, (bool, int, float, str)):
        value = str(value)
    out[key] = value


def _flush_denormal(torch):
    """torch has no getter for set_flush_denormal: a result below FLT_MIN is 0 when on."""
    x = torch.tensor([1e-30], dtype=torch.float32)
    return bool((x * 1e-10).item() == 0.0)


def _dtype_name(torch):
    name = str(torch.get_default_dtype())
    return name[len("torch."):] if name.startswith("torch.") else name


def _fp32_precision(out, b):
    """torch >= 2.9's per-backend TF32 settings (the legacy flags raise once these are set)."""
    for key, get in (
        ("fp32_precision", lambda: b.fp32_precision),
        ("cuda_matmul_fp32_precision", lambda: b.cuda.matmul.fp32_precision),
        ("cudnn_fp32_precision", lambda: b.cudnn.fp32_precision),
        ("cudnn_conv_fp32_precision", lambda: b.cudnn.conv.fp32_precision),
        ("cudnn_rnn_fp32_precision", lambda: b.cudnn.rnn.fp32_precision),
        ("mkldnn_fp32_precision", lambda: b.mkldnn.fp32_precision),
        ("mkldnn_matmul_fp32_precision", lambda: b.mkldnn.matmul.fp32_precision),
        ("mkldnn_conv_fp32_precision", lambda: b.mkldnn.conv.fp32_precision),
    ):
        try:
            get()
        except AttributeError:
            continue  # an older torch without the new API
        except Exception:
            pass
        _put(out, key, get)


def _cuda_device(out, torch):
    if torch.cuda.is_initialized():
        # which board the process really computed on (CUDA_VISIBLE_DEVICES remaps indices)
        _put(out, "cuda_device", lambda: torch.cuda.get_device_name(torch.cuda.current_device()))
        _put(out, "cuda_capability", lambda: ".".join(
            map(str, torch.cuda.get_device_capability(torch.cuda.current_device()))))


def torch_state():
    """Flat `name -> value` facts of the running torch; {} when torch is not imported."""
    torch = sys.modules.get("torch")
    if torch is None or not hasattr(torch, "backends"):
        return {}
    out = {}
    b = torch.backends
    _put(out, "num_threads", torch.get_num_threads)
    _put(out, "num_interop_threads", torch.get_num_interop_threads)
    _put(out, "cpu_capability", b.cpu.get_cpu_capability)
    _put(out, "flush_denormal", lambda: _flush_denormal(torch))
    _put(out, "mkldnn_enabled", lambda: b.mkldnn.enabled)
    _put(out, "mkldnn_deterministic", lambda: getattr(b.mkldnn, "deterministic", "none"))
    _put(out, "float32_matmul_precision", torch.get_float32_matmul_precision)
    _put(out, "deterministic_algorithms", torch.are_deterministic_algorithms_enabled)
    _put(out, "cuda_matmul_allow_tf32", lambda: b.cuda.matmul.allow_tf32)
    _put(out, "cuda_matmul_allow_fp16_reduced_precision",
         lambda: b.cuda.matmul.allow_fp16_reduced_precision_reduction)
    _put(out, "cuda_matmul_allow_bf16_reduced_precision",
         lambda: b.cuda.matmul.allow_bf16_reduced_precision_reduction)
    _put(out, "cudnn_enabled", lambda: b.cudnn.enabled)
    _put(out, "cudnn_allow_tf32", lambda: b.cudnn.allow_tf32)
    _put(out, "cudnn_deterministic", lambda: b.cudnn.deterministic)
    _put(out, "cudnn_benchmark", lambda: b.cudnn.benchmark)
    _put(out, "sdpa_flash", b.cuda.flash_sdp_enabled)
    _put(out, "sdpa_mem_efficient", b.cuda.mem_efficient_sdp_enabled)
    _put(out, "sdpa_math", b.cuda.math_sdp_enabled)
    _put(out, "sdpa_cudnn", b.cuda.cudnn_sdp_enabled)
    _put(out, "default_dtype", lambda: _dtype_name(torch))
    _fp32_precision(out, b)
    _cuda_device(out, torch)
    return out
