"""The SBOM's GPU stack against nvidia-smi and torch, on machines with an NVIDIA GPU.

CI has no GPU, so this module skips there; it runs on a lent GPU machine (see
docs/guides/gpu.md) where every GPU/driver/CUDA component is compared with nvidia-smi's and
torch's own answers.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pytest

from provenance.collectors import gpu

pytestmark = pytest.mark.skipif(
    not (gpu.kernel_driver_present() and shutil.which("nvidia-smi")), reason="no NVIDIA GPU here"
)


def test_gpu_components_match_nvidia_smi_and_torch():
    from provenance.sbom import build_bom, render
    from provenance.sbom.source import this_environment

    doc = json.loads(render(build_bom(this_environment())))
    comps = doc["components"]
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,vbios_version",
                          "--format=csv,noheader"], capture_output=True, text=True,
                         check=True).stdout.strip().splitlines()
    rows = [[v.strip() for v in line.split(",")] for line in smi]
    devices = sorted((c["bom-ref"], c["name"]) for c in comps if c["type"] == "device")
    assert devices == sorted((f"gpu:{i}", row[0]) for i, row in enumerate(rows))
    firmware = {c["bom-ref"]: c["version"] for c in comps if c["type"] == "firmware"}
    assert firmware == {f"gpu:{i}:vbios": row[2] for i, row in enumerate(rows)}
    driver = next(c for c in comps if c["type"] == "device-driver")
    assert driver["version"] == rows[0][1]
    header = subprocess.run(["nvidia-smi"], capture_output=True, text=True).stdout
    cuda = re.search(r"CUDA Version:\s*([\d.]+)", header).group(1)
    assert next(c for c in comps if c["name"] == "cuda-driver-api")["version"] == cuda
    probe = subprocess.run(
        [sys.executable, "-c", "import torch, json; print(json.dumps([torch.version.cuda, "
         "torch.backends.cudnn.version(), '.'.join(map(str, torch.cuda.nccl.version()))]))"],
        capture_output=True, text=True)
    if probe.returncode == 0:  # torch installed: the runtime stack as torch loads it
        runtime, cudnn, nccl = json.loads(probe.stdout)
        by_name = {c["name"]: c["version"] for c in comps}
        assert by_name["cuda-runtime"] == runtime
        assert by_name["nccl"] == nccl
        assert "cudnn" in by_name and str(cudnn)[:1] == by_name["cudnn"][:1]
