"""The CUDA cataloger on an image holding a toolkit's version.json and library files."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

from containers import scan_image
from tests.fixtures.oci_pack import image_config, write_oci


def test_cuda_stack(tmp_path: Path) -> None:
    files = {
        "usr/local/cuda-12.4/version.json": json.dumps(
            {"cuda": {"version": "12.4.1"}, "libcublas": {"version": "12.4.5.8"}}
        ).encode(),
        "usr/lib/x86_64-linux-gnu/libcudnn.so.9.1.0": b"\x7fELF",
        "usr/lib/x86_64-linux-gnu/libcudnn.so.9": b"\x7fELF",
        "opt/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2": b"\x7fELF",
        "usr/local/cuda-12.4/lib64/libcublas.so.12.4.5.8": b"\x7fELF",
        "opt/conda/conda-meta/numpy-1.26.4-py312.json": json.dumps(
            {"name": "numpy", "version": "1.26.4"}
        ).encode(),
    }
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    layer = buf.getvalue()
    write_oci(tmp_path / "oci", [layer], image_config([layer], ["cuda"], []), "t")
    scan = scan_image(f"oci:{tmp_path / 'oci'}")
    cu = scan.facts()["cuda"]
    assert cu["toolkit"]["cuda-12.4"]["cuda"] == "12.4.1"
    assert cu["libraries"]["cudnn"]["version"] == "9.1.0"
    assert cu["libraries"]["nccl"]["version"] == "2"
    assert cu["libraries"]["cublas"]["version"] == "12.4.5.8"
    assert scan.python["packages"]["numpy"]["version"] == "1.26.4"
