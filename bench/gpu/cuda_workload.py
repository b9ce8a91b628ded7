"""A small CUDA workload for `prov exec`: cuBLAS matmul, cuDNN conv, NCCL on one GPU.

Writes what torch and the loaded libraries themselves report, in-process, to argv[1]:
torch.backends.cudnn.version(), torch.cuda.nccl.version(), and from the libraries mapped in
/proc/self/maps: cudnnGetVersion(), cublasGetProperty(), ncclGetVersion() through ctypes;
and, last, every shared object mapped at exit (`maps_at_exit`): the ground truth a `prov
exec` record of this process must contain (NCCL and its transports load in the last moments).
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
import tempfile


def mapped(prefix: str) -> list[str]:
    with open("/proc/self/maps") as fh:
        paths = {line.split(None, 5)[-1].strip() for line in fh if "/" in line}
    return sorted(p for p in paths if os.path.basename(p).startswith(prefix) and ".so" in p)


def lib_versions() -> dict:
    out: dict = {}
    for p in mapped("libcudnn.so"):
        out.setdefault("cudnn", {})[p] = ctypes.CDLL(p).cudnnGetVersion()
    for p in mapped("libcublas.so"):
        vals = []
        for prop in (0, 1, 2):  # MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
            v = ctypes.c_int()
            ctypes.CDLL(p).cublasGetProperty(prop, ctypes.byref(v))
            vals.append(v.value)
        out.setdefault("cublas", {})[p] = ".".join(map(str, vals))
    for p in mapped("libnccl.so"):
        v = ctypes.c_int()
        ctypes.CDLL(p).ncclGetVersion(ctypes.byref(v))
        out.setdefault("nccl", {})[p] = v.value
    return out


def maps_at_exit() -> list[str]:
    with open("/proc/self/maps") as fh:
        paths = {line.split(None, 5)[-1].strip() for line in fh if "/" in line}
    return sorted(p for p in paths if ".so" in os.path.basename(p) and os.path.isfile(p))


def main() -> int:
    import torch

    torch.set_grad_enabled(False)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    report: dict = {"device": dev, "torch": torch.__version__, "torch_cuda": torch.version.cuda}
    a = torch.randn(2048, 2048, device=dev)
    report["matmul_sum"] = float((a @ a).sum())
    x = torch.randn(8, 16, 64, 64, device=dev)
    conv = torch.nn.Conv2d(16, 32, 3).to(dev)
    report["conv_sum"] = float(conv(x).sum())
    if dev == "cuda":
        report["cudnn_version"] = torch.backends.cudnn.version()
        report["nccl_version"] = ".".join(map(str, torch.cuda.nccl.version()))
        report["gpu"] = torch.cuda.get_device_name(0)
        report["capability"] = ".".join(map(str, torch.cuda.get_device_capability(0)))
        try:  # one-rank NCCL group: loads libnccl and runs an all-reduce
            import torch.distributed as dist

            fd, init = tempfile.mkstemp(prefix="nccl-init-")
            os.close(fd)
            os.unlink(init)
            dist.init_process_group("nccl", init_method=f"file://{init}", rank=0, world_size=1,
                                    device_id=torch.device("cuda:0"))
            t = torch.ones(4, device="cuda")
            dist.all_reduce(t)
            report["nccl_allreduce"] = t.tolist()
            dist.destroy_process_group()
        except Exception as exc:
            report["nccl_error"] = f"{type(exc).__name__}: {exc}"[:300]
        torch.cuda.synchronize()
    try:
        report["loaded"] = lib_versions()
    except Exception as exc:
        report["loaded_error"] = f"{type(exc).__name__}: {exc}"[:300]
    report["maps_at_exit"] = maps_at_exit()
    with open(sys.argv[1], "w") as fh:
        json.dump(report, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
