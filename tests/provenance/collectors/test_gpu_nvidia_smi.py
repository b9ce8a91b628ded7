"""The GPU collector against nvidia-smi, on machines that have an NVIDIA GPU.

CI has no GPU, so this module skips there; it runs on the lent H200 machine (docs/guides/gpu.md;
its result: bench/results/2026-11-30-h200/manifest.md), where it compares every identity
field with nvidia-smi's own answer.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from provenance.collectors import gpu

pytestmark = pytest.mark.skipif(
    not (gpu.kernel_driver_present() and shutil.which("nvidia-smi")), reason="no NVIDIA GPU here"
)
FIELDS = ("name,driver_version,compute_cap,vbios_version,ecc.mode.current,persistence_mode,"
          "compute_mode,mig.mode.current,power.limit,memory.total,uuid,pci.bus_id")


def nvidia_smi() -> list[dict[str, str]]:
    out = subprocess.run(["nvidia-smi", f"--query-gpu={FIELDS}", "--format=csv,noheader,nounits"],
                         capture_output=True, text=True, check=True).stdout
    keys = FIELDS.split(",")
    return [dict(zip(keys, (v.strip() for v in line.split(",")), strict=True))
            for line in out.strip().splitlines()]


def test_every_identity_field_matches_nvidia_smi():
    section = gpu.collect([])
    smi = nvidia_smi()
    assert section["count"] == len(smi)
    for i, expected in enumerate(smi):
        dev = section["devices"][str(i)]
        assert dev["name"] == expected["name"]
        assert section["driver"] == expected["driver_version"]
        assert dev["compute_capability"] == expected["compute_cap"]
        assert dev["vbios"] == expected["vbios_version"]
        assert dev["uuid"] == expected["uuid"]
        assert dev["ecc_enabled"] == (expected["ecc.mode.current"] == "Enabled")
        assert dev["persistence_mode"] == (expected["persistence_mode"] == "Enabled")
        assert dev["mig_enabled"] == (expected["mig.mode.current"] == "Enabled")
        assert dev["compute_mode"] == expected["compute_mode"].lower()
        assert dev["power_limit_w"] == int(float(expected["power.limit"]))
        assert dev["memory_total_mib"] == int(expected["memory.total"])
        assert dev["pci_bus_id"].lower().endswith(expected["pci.bus_id"].lower()[-12:])
