"""The `gpu` section from NVML (nvidia-ml-py): driver, CUDA driver, and every board.

Identity: name, compute capability, driver and CUDA driver versions, VBIOS, ECC,
persistence, compute and MIG modes, power limit, memory size. Context: UUID, serial, PCI
bus id, clocks, temperature, utilisation. No driver or no GPU is a normal, recorded state.
Each NVML call is wrapped on its own: a query a board does not support is recorded as such.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only (this module uses postponed annotations)
    from provenance.model.sections import GpuDevice, GpuSection



def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _try(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except Exception as exc:  # NVMLError_NotSupported and friends
        return f"unavailable: {type(exc).__name__}"


def _device(nv: Any, index: int) -> GpuDevice:
    h = nv.nvmlDeviceGetHandleByIndex(index)
    major_minor = _try(lambda: nv.nvmlDeviceGetCudaComputeCapability(h))
    ecc = _try(lambda: nv.nvmlDeviceGetEccMode(h))
    mig = _try(lambda: nv.nvmlDeviceGetMigMode(h))
    compute_modes = {0: "default", 1: "exclusive_thread", 2: "prohibited", 3: "exclusive_process"}
    dev: GpuDevice = {
        "name": _try(lambda: _text(nv.nvmlDeviceGetName(h))),
        "compute_capability": (
            f"{major_minor[0]}.{major_minor[1]}" if isinstance(major_minor, tuple) else major_minor
        ),
        "vbios": _try(lambda: _text(nv.nvmlDeviceGetVbiosVersion(h))),
        "memory_total_mib": _try(lambda: nv.nvmlDeviceGetMemoryInfo(h).total // (1 << 20)),
        "ecc_enabled": bool(ecc[0]) if isinstance(ecc, (tuple, list)) else ecc,
        "persistence_mode": _try(lambda: bool(nv.nvmlDeviceGetPersistenceMode(h))),
        "compute_mode": _try(lambda: compute_modes.get(nv.nvmlDeviceGetComputeMode(h), "unknown")),
        "mig_enabled": bool(mig[0]) if isinstance(mig, (tuple, list)) else mig,
        "power_limit_w": _try(lambda: nv.nvmlDeviceGetEnforcedPowerLimit(h) // 1000),
        "uuid": _try(lambda: _text(nv.nvmlDeviceGetUUID(h))),
        "serial": _try(lambda: _text(nv.nvmlDeviceGetSerial(h))),
        "pci_bus_id": _try(lambda: _text(nv.nvmlDeviceGetPciInfo(h).busId)),
        "temperature_c": _try(lambda: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)),
        "power_draw_w": _try(lambda: nv.nvmlDeviceGetPowerUsage(h) // 1000),
        "memory_used_mib": _try(lambda: nv.nvmlDeviceGetMemoryInfo(h).used // (1 << 20)),
        "utilization_pct": _try(lambda: nv.nvmlDeviceGetUtilizationRates(h).gpu),
        "clocks": {
            "sm_mhz": _try(lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)),
            "mem_mhz": _try(lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM)),
            "sm_max_mhz": _try(lambda: nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_SM)),
        },
    }
    return dev


def kernel_driver_present() -> bool:
    """NVML needs the NVIDIA kernel driver; containers with GPUs get these paths mounted."""
    return Path("/proc/driver/nvidia").exists() or Path("/dev/nvidiactl").exists()


def collect(warnings: list[str]) -> GpuSection:
    if not kernel_driver_present():
        # NVML cannot work without the kernel driver: say why, without loading it.
        return {"count": 0, "driver": "none: no NVIDIA kernel driver (/proc/driver/nvidia absent)"}
    try:
        import pynvml as nv  # nvidia-ml-py
    except ImportError:
        return {"count": 0, "driver": "unknown: nvidia-ml-py is not installed"}
    try:
        nv.nvmlInit()
    except Exception as exc:
        # NVML_ERROR_LIBRARY_NOT_FOUND / DRIVER_NOT_LOADED: a machine without an NVIDIA GPU.
        return {"count": 0, "driver": f"none: {_text(exc) or type(exc).__name__}"}
    try:
        cuda = _try(nv.nvmlSystemGetCudaDriverVersion_v2)
        driver = _try(lambda: _text(nv.nvmlSystemGetDriverVersion()))
        nvml = _try(lambda: _text(nv.nvmlSystemGetNVMLVersion()))
        count = nv.nvmlDeviceGetCount()
        return {
            "driver": driver,
            "cuda_driver": f"{cuda // 1000}.{cuda % 1000 // 10}" if isinstance(cuda, int) else cuda,
            "nvml": nvml,
            "count": count,
            "devices": {str(i): _device(nv, i) for i in range(count)},
        }
    finally:
        _try(nv.nvmlShutdown)
