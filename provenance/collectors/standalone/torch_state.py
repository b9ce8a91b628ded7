"""torch's build facts and numerics flags, read from an already imported torch module.

The one reader of torch's state (issue #26), used in two places:
- the snapshot (`collectors/torch_probe.py`): a fresh subprocess of the target interpreter
  imports torch and calls `snapshot(torch)`: the build facts (`torch.*`) and the flags a
  fresh process gets (`torch.flags.*`);
- the in-process probe of a `prov exec` run calls `flags(torch)` inside the program, when it
  imports torch and at exit: the flags the process had (`runtime.torch.flags.*`). A script
  can change them after start-up (`torch.set_num_threads`, `torch.backends.*`,
  `torch.set_flush_denormal`); nothing outside the process sees that.
Both record one list of flags, `FLAGS`. This file never imports torch (the caller hands in
the module) and never calls anything that changes torch's state: `get_num_interop_threads`
does not start the inter-op pool, so a later `set_num_interop_threads` still works, and
`preferred_blas_library()` without an argument only reads. The build facts may touch the
CUDA driver (`cuda.is_available`), so only the snapshot's subprocess reads them.
Standard library only, Python 3.8+: it runs in the target's interpreter, without prov.
"""

from __future__ import annotations

from types import ModuleType


def _value(fn):
    try:
        value = fn()
    except Exception as exc:  # a fact torch refuses to report is recorded, never fatal
        return f"unavailable: {type(exc).__name__}"
    if value is None:
        return "none"
    if isinstance(value, list):
        return [v if isinstance(v, (bool, int, float, str)) else str(v) for v in value]
    return value if isinstance(value, (bool, int, float, str)) else str(value)


def _flush_denormal(torch: ModuleType) -> bool:
    """torch has no getter for set_flush_denormal: a result below FLT_MIN is 0 when on."""
    x = torch.tensor([1e-30], dtype=torch.float32)
    return bool((x * 1e-10).item() == 0.0)


def _dtype_name(torch: ModuleType) -> str:
    name = str(torch.get_default_dtype())
    return name[len("torch."):] if name.startswith("torch.") else name


# THE LIST of torch's numerics flags: (key, getter of the torch module). The snapshot and
# the probe both record exactly these (plus the optional ones below, where torch has them).
FLAGS = (
    ("num_threads", lambda t: t.get_num_threads()),
    ("num_interop_threads", lambda t: t.get_num_interop_threads()),
    ("cpu_capability", lambda t: t.backends.cpu.get_cpu_capability()),
    ("flush_denormal", _flush_denormal),
    ("default_dtype", _dtype_name),
    ("mkldnn_enabled", lambda t: t.backends.mkldnn.enabled),
    ("mkldnn_deterministic", lambda t: getattr(t.backends.mkldnn, "deterministic", "none")),
    ("float32_matmul_precision", lambda t: t.get_float32_matmul_precision()),
    ("deterministic_algorithms", lambda t: t.are_deterministic_algorithms_enabled()),
    ("preferred_blas_library", lambda t: t.backends.cuda.preferred_blas_library()),
    ("cuda_matmul_allow_tf32", lambda t: t.backends.cuda.matmul.allow_tf32),
    ("cuda_matmul_allow_fp16_reduced_precision",
     lambda t: t.backends.cuda.matmul.allow_fp16_reduced_precision_reduction),
    ("cuda_matmul_allow_bf16_reduced_precision",
     lambda t: t.backends.cuda.matmul.allow_bf16_reduced_precision_reduction),
    ("cudnn_enabled", lambda t: t.backends.cudnn.enabled),
    ("cudnn_allow_tf32", lambda t: t.backends.cudnn.allow_tf32),
    ("cudnn_deterministic", lambda t: t.backends.cudnn.deterministic),
    ("cudnn_benchmark", lambda t: t.backends.cudnn.benchmark),
    ("sdpa_flash", lambda t: t.backends.cuda.flash_sdp_enabled()),
    ("sdpa_mem_efficient", lambda t: t.backends.cuda.mem_efficient_sdp_enabled()),
    ("sdpa_math", lambda t: t.backends.cuda.math_sdp_enabled()),
    ("sdpa_cudnn", lambda t: t.backends.cuda.cudnn_sdp_enabled()),
)

# torch >= 2.9's per-backend TF32 settings (the legacy flags raise once these are set):
# recorded where the attribute exists, absent on an older torch.
FP32_PRECISION = (
    ("fp32_precision", lambda b: b.fp32_precision),
    ("cuda_matmul_fp32_precision", lambda b: b.cuda.matmul.fp32_precision),
    ("cudnn_fp32_precision", lambda b: b.cudnn.fp32_precision),
    ("cudnn_conv_fp32_precision", lambda b: b.cudnn.conv.fp32_precision),
    ("cudnn_rnn_fp32_precision", lambda b: b.cudnn.rnn.fp32_precision),
    ("mkldnn_fp32_precision", lambda b: b.mkldnn.fp32_precision),
    ("mkldnn_matmul_fp32_precision", lambda b: b.mkldnn.matmul.fp32_precision),
    ("mkldnn_conv_fp32_precision", lambda b: b.mkldnn.conv.fp32_precision),
)


def _cudnn_version(torch: ModuleType):
    v = torch.backends.cudnn.version()
    if not v:
        return None
    # cuDNN 9 encodes major*10000 + minor*100 + patch; cuDNN 8 and older major*1000 + ...
    major, rest = (v // 10000, v % 10000) if v >= 90000 else (v // 1000, v % 1000)
    return f"{major}.{rest // 100}.{rest % 100}"


def _nccl(torch: ModuleType):
    if not torch.cuda.is_available():
        return None
    return ".".join(map(str, torch.cuda.nccl.version()))


# What torch was built with and what it finds on the host: the snapshot's only.
BUILD = (
    ("version", lambda t: t.__version__),
    ("git_version", lambda t: t.version.git_version),
    ("cuda_runtime", lambda t: t.version.cuda),
    ("hip", lambda t: t.version.hip),
    ("debug", lambda t: t.version.debug),
    ("cuda_available", lambda t: t.cuda.is_available()),
    ("cuda_device_count", lambda t: t.cuda.device_count()),
    ("cuda_arch_list", lambda t: t.cuda.get_arch_list()),
    ("cudnn", _cudnn_version),
    ("nccl", _nccl),
    ("mkldnn", lambda t: t.backends.mkldnn.is_available()),
    ("openmp", lambda t: t.backends.openmp.is_available()),
)


def _fp32_precision(out: dict, backends: object) -> None:
    for key, get in FP32_PRECISION:
        try:
            get(backends)
        except AttributeError:
            continue  # an older torch without the new API
        except Exception:
            pass  # present but refusing: recorded as unavailable below
        out[key] = _value(lambda g=get: g(backends))


def _cuda_device(out: dict, torch: ModuleType) -> None:
    """Which board the process computed on (CUDA_VISIBLE_DEVICES remaps indices); only where
    the process itself initialised CUDA, which a fresh snapshot process never has."""
    if _value(torch.cuda.is_initialized) is not True:
        return
    cuda = torch.cuda
    out["cuda_device"] = _value(lambda: cuda.get_device_name(cuda.current_device()))
    out["cuda_capability"] = _value(
        lambda: ".".join(map(str, cuda.get_device_capability(cuda.current_device()))))


def flags(torch: ModuleType) -> dict:
    """`name -> value` of `FLAGS` (and the optional ones torch has) in this process."""
    out = {key: _value(lambda g=get: g(torch)) for key, get in FLAGS}
    _fp32_precision(out, torch.backends)
    _cuda_device(out, torch)
    return out


def build(torch: ModuleType) -> dict:
    """`name -> value` of `BUILD`: may initialise the CUDA driver, so never in a program."""
    return {key: _value(lambda g=get: g(torch)) for key, get in BUILD}


def snapshot(torch: ModuleType) -> dict:
    """The snapshot's `torch` section: build facts, and the flags under `flags`."""
    out = build(torch)
    out["flags"] = flags(torch)
    return out
