"""The `cpu` section: model, cores available, and the ISA flags that change numerics.

Which kernels oneDNN, MKL, OpenBLAS and torch's CPU dispatch pick depends on these flags
(AVX2 vs AVX-512 vs AMX reductions differ bit-wise), so they are identity.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only (this module uses postponed annotations)
    from provenance.model.sections import CpuSection


# x86 and Arm flags that select different arithmetic kernels.
_NUMERIC_FLAGS = re.compile(
    r"^(sse4_1|sse4_2|avx|avx2|fma|f16c|avx_vnni|avx512.*|amx.*|"
    r"asimd|asimdhp|asimddp|sve|sve2|bf16|i8mm|sme|sme2|sme_.*|fphp)$"
)


def parse_cpuinfo(text: str) -> dict[str, Any]:
    first: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if first:
                break
            continue
        key, _, value = line.partition(":")
        first.setdefault(key.strip(), value.strip())
    flags = (first.get("flags") or first.get("Features") or "").split()
    return {
        "vendor": first.get("vendor_id") or first.get("CPU implementer", "unknown"),
        "model": first.get("model name") or first.get("CPU part", "unknown"),
        "isa_flags": sorted(f for f in set(flags) if _NUMERIC_FLAGS.match(f)),
        "mhz": first.get("cpu MHz", ""),
    }


def collect(warnings: list[str]) -> CpuSection:
    section: CpuSection = {"arch": os.uname().machine, "logical_cores": os.cpu_count() or 0}
    try:
        section["cores_available"] = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        section["cores_available"] = section["logical_cores"]
    try:
        section.update(parse_cpuinfo(Path("/proc/cpuinfo").read_text(errors="replace")))
    except OSError as exc:
        warnings.append(f"cpu: /proc/cpuinfo unreadable: {exc.strerror}")
    if not section.get("mhz"):
        section.pop("mhz", None)
    return section
