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


def _tar(files: dict[str, bytes], links: dict[str, str]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for name, target in links.items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tf.addfile(info)
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_libraries_are_named_by_the_package_that_ships_them(tmp_path: Path) -> None:
    """A wheel's RECORD, a dpkg .list (through the usr-merge symlink) and a conda record
    each own one library; a fourth nobody lists keeps the soname guess, marked as such."""
    site = "opt/venv/lib/python3.12/site-packages"
    cublas = f"{site}/nvidia/cublas/lib/libcublas.so.13"
    record = "nvidia/cublas/lib/libcublas.so.13,,\nnvidia_cublas-13.1.1.3.dist-info/METADATA,,\n"
    files = {
        "etc/os-release": b"ID=debian\nVERSION_ID=12\n",
        cublas: b"\x7fELF cublas",
        f"{site}/nvidia_cublas-13.1.1.3.dist-info/METADATA": (
            b"Metadata-Version: 2.1\nName: nvidia-cublas\nVersion: 13.1.1.3\n\n"
        ),
        f"{site}/nvidia_cublas-13.1.1.3.dist-info/RECORD": record.encode(),
        "usr/lib/x86_64-linux-gnu/libcudnn.so.9.1.0": b"\x7fELF cudnn",
        "var/lib/dpkg/status": (
            b"Package: libcudnn9-cuda-12\nStatus: install ok installed\nArchitecture: amd64\n"
            b"Version: 9.1.0.70-1\n"
        ),
        "var/lib/dpkg/info/libcudnn9-cuda-12.list": (
            b"/.\n/lib\n/lib/x86_64-linux-gnu/libcudnn.so.9.1.0\n"
        ),
        "opt/conda/lib/libnccl.so.2.21.5": b"\x7fELF nccl",
        "opt/conda/conda-meta/nccl-2.21.5-1.json": json.dumps(
            {"name": "nccl", "version": "2.21.5.1", "files": ["lib/libnccl.so.2.21.5"],
             "paths_data": {"paths": [{"_path": "lib/libnccl.so.2.21.5", "sha256": "00" * 32}]}}
        ).encode(),
        "usr/local/lib/libcudart.so.12": b"\x7fELF cudart",
    }
    layer = _tar(files, {"lib": "usr/lib"})
    write_oci(tmp_path / "oci", [layer], image_config([layer], ["cuda"], []), "t")
    scan = scan_image(f"oci:{tmp_path / 'oci'}")
    libs = scan.facts()["cuda"]["libraries"]
    assert libs["cublas"]["owners"] == {
        "/" + cublas: {"package": "python:nvidia-cublas", "version": "13.1.1.3"}
    }
    assert libs["cudnn"]["owners"] == {
        "/usr/lib/x86_64-linux-gnu/libcudnn.so.9.1.0": {
            "package": "dpkg:libcudnn9-cuda-12", "version": "9.1.0.70-1"
        }
    }
    assert libs["nccl"]["owners"]["/opt/conda/lib/libnccl.so.2.21.5"]["package"] == "python:nccl"
    assert "owners" not in libs["cudart"]

    from provenance.sbom import validate
    from tests.provenance.sbom.helpers_sbom import prov

    done = prov("sbom", "--image", f"oci:{tmp_path / 'oci'}", timeout=300)
    assert done.returncode == 0, done.stderr
    validate(done.stdout)
    comps = {c["bom-ref"]: c for c in json.loads(done.stdout)["components"]}

    def owner(c: dict) -> str:
        return next(p["value"] for p in c["properties"] if p["name"] == "prov:owner")

    blas = comps["cuda:lib:cublas:python:nvidia-cublas"]
    assert (blas["version"], blas["purl"]) == ("13.1.1.3", "pkg:pypi/nvidia-cublas@13.1.1.3")
    dnn = comps["cuda:lib:cudnn:dpkg:libcudnn9-cuda-12"]
    assert dnn["purl"].startswith("pkg:deb/debian/libcudnn9-cuda-12@9.1.0.70-1?arch=amd64")
    assert comps["cuda:lib:nccl:python:nccl"]["purl"] == "pkg:conda/nccl@2.21.5.1"
    rt = comps["cuda:lib:cudart"]
    assert owner(rt) == "none" and rt["version"] == "12" and "purl" not in rt
