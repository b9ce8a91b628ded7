"""The perturbation matrix: what is changed, how, and whether it may change numerics.

`expect` is the row's class: `cause` (a user would expect it may change the numbers: the
identity must change whenever the outputs do) or `context` (must never move the identity).
Each perturbation is applied alone against the baseline.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Perturbation:
    name: str
    what: str
    expect: str  # "cause" | "context"
    env: dict[str, str] = field(default_factory=dict)
    args: tuple[str, ...] = ()
    # special handling in the runner: "repeat", "cwd", "hostname", "user", "alt-python",
    # "ld-preload", "tmpdir", "api-env" (through run_supervised's env_extra)
    special: str = ""


def cpu_matrix() -> list[Perturbation]:
    P = Perturbation
    return [
        P("attention", "attention implementation sdpa -> eager", "cause", args=("--attn", "eager")),
        P("dtype", "dtype float32 -> bfloat16 (model and kernels)", "cause",
          args=("--dtype", "bfloat16")),
        P("omp-threads", "OMP_NUM_THREADS=1 in the environment", "cause",
          env={"OMP_NUM_THREADS": "1"}),
        P("torch-threads", "torch.set_num_threads(1) inside the workload", "cause",
          args=("--threads", "1")),
        P("api-env-openblas", "OPENBLAS_CORETYPE=Prescott given only to the command "
          "(run_supervised env_extra, as the runners pass settings)", "cause",
          env={"OPENBLAS_CORETYPE": "Prescott"}, special="api-env"),
        P("aten-cpu-capability", "ATEN_CPU_CAPABILITY=default (generic CPU kernels)", "cause",
          env={"ATEN_CPU_CAPABILITY": "default"}),
        P("onednn-isa", "ONEDNN_MAX_CPU_ISA=SSE41 in the environment", "cause",
          env={"ONEDNN_MAX_CPU_ISA": "SSE41"}),
        P("mkldnn-off", "torch.backends.mkldnn.enabled = False inside the workload", "cause",
          args=("--no-mkldnn",)),
        P("flush-denormal", "torch.set_flush_denormal(True) inside the workload", "cause",
          args=("--flush-denormal",)),
        P("numpy-version", "another numpy, from a second virtual environment", "cause",
          special="alt-python"),
        P("ld-preload", "LD_PRELOAD of a library whose constructor sets FTZ/DAZ", "cause",
          special="ld-preload"),
        *context_rows(),
    ]


def context_rows() -> list[Perturbation]:
    P = Perturbation
    return [
        P("run-id", "the same run again (new run id, later wall-clock time)", "context",
          special="repeat"),
        P("cwd", "another working directory", "context", special="cwd"),
        P("hostname", "another hostname (new UTS namespace, unshare -u)", "context",
          special="hostname"),
        P("time-zone", "TZ=Pacific/Kiritimati (another time zone)", "context",
          env={"TZ": "Pacific/Kiritimati"}),
        P("user", "another user (uid/gid nobody via setpriv, with file-access capabilities)",
          "context", special="user"),
        P("tmpdir", "TMPDIR pointing elsewhere", "context", special="tmpdir"),
    ]


def gpu_matrix(device_count: int) -> list[Perturbation]:
    P = Perturbation
    rows = [
        P("attention", "attention implementation sdpa -> eager", "cause", args=("--attn", "eager")),
        P("dtype", "dtype float32 -> bfloat16 (model and kernels)", "cause",
          args=("--dtype", "bfloat16")),
        P("tf32-in-process", "TF32 allowed by the script (torch.backends + matmul precision)",
          "cause", args=("--tf32",)),
        P("nvidia-tf32-override", "NVIDIA_TF32_OVERRIDE=0 in the environment", "cause",
          env={"NVIDIA_TF32_OVERRIDE": "0"}),
        P("cublas-workspace", "CUBLAS_WORKSPACE_CONFIG=:4096:8 in the environment", "cause",
          env={"CUBLAS_WORKSPACE_CONFIG": ":4096:8"}),
        P("sdpa-kernel", "SDPA kernel forced to MATH", "cause", args=("--sdpa-kernel", "MATH")),
    ]
    if device_count > 1:
        rows.append(P("cuda-visible-devices", "CUDA_VISIBLE_DEVICES=1 (another board)", "cause",
                      env={"CUDA_VISIBLE_DEVICES": "1"}))
    return rows + [r for r in context_rows() if r.special != "user"]
