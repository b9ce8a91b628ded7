"""The manifest's top-level sections as the collectors build them, typed.

TypedDicts: at run time each is the plain dict the manifest always held (the same JSON and
TOML on disk, the same digests); for a reader and a type checker they say which keys a
section has. A section a collector could not read is a marker string instead
(`unavailable: <reason>`, provenance.model.facts), hence `Section | str` where they are
stored. Keys a collector writes only sometimes are `NotRequired`.
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict


class HostSection(TypedDict):
    """`host`: context only (who, where, when)."""

    hostname: str
    boot_id: str
    user: str
    pid: int
    cwd: str
    timestamp: str
    container: str
    prov_version: str


class CpuSection(TypedDict):
    arch: str
    logical_cores: int
    cores_available: int
    # from /proc/cpuinfo, when it is readable
    vendor: NotRequired[str]
    model: NotRequired[str]
    isa_flags: NotRequired[list[str]]
    mhz: NotRequired[str]  # dropped when cpuinfo has none


class GpuClocks(TypedDict):
    sm_mhz: Any
    mem_mhz: Any
    sm_max_mhz: Any


class GpuDevice(TypedDict):
    """`gpu.devices.<index>`: each value is the fact, or `unavailable: <reason>` from NVML."""

    name: Any
    compute_capability: Any
    vbios: Any
    memory_total_mib: Any
    ecc_enabled: Any
    persistence_mode: Any
    compute_mode: Any
    mig_enabled: Any
    power_limit_w: Any
    uuid: Any
    serial: Any
    pci_bus_id: Any
    temperature_c: Any
    power_draw_w: Any
    memory_used_mib: Any
    utilization_pct: Any
    clocks: GpuClocks


class GpuSection(TypedDict):
    count: int
    driver: Any  # the version, or `none: <why>` / `unknown: <why>` without a working NVML
    cuda_driver: NotRequired[Any]
    nvml: NotRequired[Any]
    devices: NotRequired[dict[str, GpuDevice]]


class KernelInfo(TypedDict):
    release: str
    version: str


class OsSection(TypedDict):
    release: dict[str, str] | str  # os-release's keys, or `unavailable: no os-release file`
    system: str
    machine: str
    kernel: KernelInfo
    libc: dict[str, str]
    dpkg: NotRequired[dict[str, Any]]  # package -> entry (containers.catalogers.dpkg)
    apk: NotRequired[dict[str, Any]]


class Interpreter(TypedDict):
    """`python.*` about the interpreter itself (`packages` and `path` sit beside it)."""

    implementation: str
    version: str
    build: str
    compiler: str
    abi: str
    abiflags: str
    cache_tag: str
    platform: str
    gil_disabled: bool
    executable: str
    prefix: str
    base_prefix: str
    byteorder: str
    maxunicode: int


class PackageEntry(TypedDict):
    """`python.packages.<normalised name>`: one installed distribution."""

    name: str
    version: str
    location: str
    installer: NotRequired[str]
    direct_url: NotRequired[dict[str, Any]]
    fingerprint: str  # of the RECORD's content (python_dist), or `unavailable: no RECORD`
    record_sha256: NotRequired[str]  # the RECORD file's own bytes
    shadowed: NotRequired[list[str]]  # later copies on sys.path, not imported
