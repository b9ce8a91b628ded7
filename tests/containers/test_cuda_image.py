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
    # each library's purl is its package's, with the file as subpath (never the wheel's own)
    assert (blas["version"], blas["purl"]) == (
        "13.1.1.3", "pkg:pypi/nvidia-cublas@13.1.1.3#nvidia/cublas/lib/libcublas.so.13"
    )
    dnn = comps["cuda:lib:cudnn:dpkg:libcudnn9-cuda-12"]
    assert dnn["purl"].startswith("pkg:deb/debian/libcudnn9-cuda-12@9.1.0.70-1?arch=amd64")
    assert dnn["purl"].endswith("#usr/lib/x86_64-linux-gnu/libcudnn.so.9.1.0")
    assert comps["cuda:lib:nccl:python:nccl"]["purl"] == (
        "pkg:conda/nccl@2.21.5.1#lib/libnccl.so.2.21.5"
    )
    rt = comps["cuda:lib:cudart"]
    assert owner(rt) == "none" and rt["version"] == "12" and "purl" not in rt


# NVIDIA's cu12 wheels as they lay out their shared objects (names from the real wheels),
# with a few bytes standing in for each library
NVIDIA_WHEELS = {
    "nvidia-cudnn-cu12": ("9.10.2.21", "cudnn", [
        "libcudnn.so.9", "libcudnn_adv.so.9", "libcudnn_cnn.so.9",
        "libcudnn_engines_precompiled.so.9", "libcudnn_engines_runtime_compiled.so.9",
        "libcudnn_graph.so.9", "libcudnn_heuristic.so.9", "libcudnn_ops.so.9"]),
    "nvidia-cusolver-cu12": ("11.7.3.90", "cusolver", ["libcusolver.so.11", "libcusolverMg.so.11"]),
    "nvidia-curand-cu12": ("10.3.9.90", "curand", ["libcurand.so.10"]),
    "nvidia-cuda-nvrtc-cu12": ("12.8.93", "cuda_nvrtc", [
        "libnvrtc.so.12", "libnvrtc-builtins.so.12.8"]),
    "nvidia-nvjitlink-cu12": ("12.8.93", "nvjitlink", ["libnvJitLink.so.12"]),
    "nvidia-cuda-cupti-cu12": ("12.8.90", "cuda_cupti", [
        "libcupti.so.12", "libcheckpoint.so", "libnvperf_host.so", "libpcsamplingutil.so"]),
    "nvidia-cufile-cu12": ("1.13.1.3", "cufile", ["libcufile.so.0", "libcufile_rdma.so.1"]),
    "nvidia-cusparselt-cu12": ("0.7.1", "cusparselt", ["libcusparseLt.so.0"]),
    "nvidia-nvshmem-cu12": ("3.3.20", "nvshmem", [
        "libnvshmem_host.so.3", "nvshmem_bootstrap_uid.so.3", "nvshmem_transport_ibrc.so.3"]),
}


def _nvidia_files(site: str) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for project, (version, sub, libs) in NVIDIA_WHEELS.items():
        dist = f"{project.replace('-', '_')}-{version}.dist-info"
        rows = [f"nvidia/{sub}/lib/{lib},,{len(lib)}" for lib in libs]
        rows += [f"nvidia/{sub}/__init__.py,,0", f"{dist}/METADATA,,", f"{dist}/RECORD,,"]
        files[f"{site}/{dist}/METADATA"] = (
            f"Metadata-Version: 2.1\nName: {project}\nVersion: {version}\n\n".encode()
        )
        files[f"{site}/{dist}/RECORD"] = ("\n".join(rows) + "\n").encode()
        files[f"{site}/nvidia/{sub}/__init__.py"] = b""
        files.update({f"{site}/nvidia/{sub}/lib/{lib}": lib.encode() for lib in libs})
    return files


def test_every_shared_object_of_a_cuda_package_is_named_with_its_owner(tmp_path: Path) -> None:
    """Owners decide, not a list of names: every .so under nvidia/ gets a library entry with
    its wheel; a dpkg (cuRAND from NVIDIA's repository) and a conda package (NVRTC) name
    theirs; the SBOM holds one component per library with a purl of its own."""
    site = "opt/venv/lib/python3.12/site-packages"
    files = _nvidia_files(site)
    files.update({
        "etc/os-release": b"ID=debian\nVERSION_ID=12\n",
        "usr/lib/x86_64-linux-gnu/libcurand.so.10.3.5.147": b"\x7fELF curand",
        "var/lib/dpkg/status": (
            b"Package: libcurand-12-4\nStatus: install ok installed\nArchitecture: amd64\n"
            b"Version: 10.3.5.147-1\n"
        ),
        "var/lib/dpkg/info/libcurand-12-4.list": (
            b"/.\n/usr\n/usr/lib/x86_64-linux-gnu/libcurand.so.10.3.5.147\n"
        ),
        "opt/conda/lib/libnvrtc.so.12.4.127": b"\x7fELF nvrtc",
        "opt/conda/conda-meta/cuda-nvrtc-12.4.127-0.json": json.dumps(
            {"name": "cuda-nvrtc", "version": "12.4.127", "files": ["lib/libnvrtc.so.12.4.127"]}
        ).encode(),
    })
    layer = _tar(files, {})
    write_oci(tmp_path / "oci", [layer], image_config([layer], ["cuda"], []), "t")
    libs = scan_image(f"oci:{tmp_path / 'oci'}").facts()["cuda"]["libraries"]
    owned = {p: o["package"] for e in libs.values() for p, o in (e.get("owners") or {}).items()}
    shipped = [p for p in files if "/nvidia/" in p and ".so" in p]
    assert len(shipped) == 24
    for path in shipped:
        project = next(n for n, (_, sub, _) in NVIDIA_WHEELS.items() if f"/nvidia/{sub}/" in path)
        assert owned.get("/" + path) == f"python:{project}", path
    assert libs["cudnn_ops"]["version"] == "9" and libs["nvshmem_bootstrap_uid"]
    assert owned["/usr/lib/x86_64-linux-gnu/libcurand.so.10.3.5.147"] == "dpkg:libcurand-12-4"
    assert owned["/opt/conda/lib/libnvrtc.so.12.4.127"] == "python:cuda-nvrtc"

    from provenance.sbom import validate
    from tests.provenance.sbom.helpers_sbom import prov

    done = prov("sbom", "--image", f"oci:{tmp_path / 'oci'}", timeout=300)
    assert done.returncode == 0, done.stderr
    validate(done.stdout)
    comps = json.loads(done.stdout)["components"]
    refs = [c["bom-ref"] for c in comps]
    assert len(refs) == len(set(refs))
    lib_comps = [c for c in comps if c["bom-ref"].startswith("cuda:lib:")]
    purls = [c["purl"] for c in lib_comps]
    assert len(purls) == len(set(purls)) == 26  # the 24 wheel files, cuRAND, NVRTC
    others = {c["purl"] for c in comps if not c["bom-ref"].startswith("cuda:lib:") and "purl" in c}
    assert not others & set(purls)  # never a wheel's own purl
    by_ref = {c["bom-ref"]: c for c in lib_comps}
    assert by_ref["cuda:lib:cudnn_ops:python:nvidia-cudnn-cu12"]["purl"] == (
        "pkg:pypi/nvidia-cudnn-cu12@9.10.2.21#nvidia/cudnn/lib/libcudnn_ops.so.9"
    )
    assert by_ref["cuda:lib:curand:dpkg:libcurand-12-4"]["purl"].endswith(
        "#usr/lib/x86_64-linux-gnu/libcurand.so.10.3.5.147"
    )
    assert by_ref["cuda:lib:nvrtc:python:cuda-nvrtc"]["purl"] == (
        "pkg:conda/cuda-nvrtc@12.4.127#lib/libnvrtc.so.12.4.127"
    )
    assert by_ref["cuda:lib:nvshmem_bootstrap_uid:python:nvidia-nvshmem-cu12"]["name"] == (
        "nvshmem_bootstrap_uid"
    )


# NVIDIA's cu13 wheels install into one shared `nvidia/cu13/lib` (names from the real wheels)
CU13_WHEELS = {
    "nvidia-cuda-nvrtc": ("13.0.88", [
        "libnvrtc.so.13", "libnvrtc.alt.so.13", "libnvrtc-builtins.so.13.0",
        "libnvrtc-builtins.alt.so.13.0"]),
    "nvidia-cublas": ("13.1.1.3", ["libcublas.so.13", "libcublasLt.so.13", "libnvblas.so.13"]),
    "nvidia-cuda-cupti": ("13.0.85", ["libcupti.so.13", "libnvperf_host.so"]),
}


def test_cu13_wheels_sharing_one_lib_directory_each_name_their_own(tmp_path: Path) -> None:
    """Three wheels' libraries in the one `nvidia/cu13/lib`: each file is owned by the wheel
    whose RECORD lists it (not the directory's first or last), one purl per library."""
    site = "opt/venv/lib/python3.11/site-packages"
    files: dict[str, bytes] = {}
    for project, (version, libs) in CU13_WHEELS.items():
        dist = f"{project.replace('-', '_')}-{version}.dist-info"
        rows = [f"nvidia/cu13/lib/{lib},,{len(lib)}" for lib in libs]
        files[f"{site}/{dist}/METADATA"] = (
            f"Metadata-Version: 2.4\nName: {project}\nVersion: {version}\n\n".encode()
        )
        files[f"{site}/{dist}/RECORD"] = ("\n".join([*rows, f"{dist}/RECORD,,"]) + "\n").encode()
        files.update({f"{site}/nvidia/cu13/lib/{lib}": lib.encode() for lib in libs})
    layer = _tar(files, {})
    write_oci(tmp_path / "oci", [layer], image_config([layer], ["cu13"], []), "t")
    libs = scan_image(f"oci:{tmp_path / 'oci'}").facts()["cuda"]["libraries"]
    owned = {p: o["package"] for e in libs.values() for p, o in (e.get("owners") or {}).items()}
    for project, (_, names) in CU13_WHEELS.items():
        for lib in names:
            assert owned[f"/{site}/nvidia/cu13/lib/{lib}"] == f"python:{project}", lib

    from tests.provenance.sbom.helpers_sbom import prov

    done = prov("sbom", "--image", f"oci:{tmp_path / 'oci'}", timeout=300)
    assert done.returncode == 0, done.stderr
    comps = [c for c in json.loads(done.stdout)["components"]
             if c["bom-ref"].startswith("cuda:lib:")]
    purls = sorted(c["purl"] for c in comps)
    assert len(purls) == len(set(purls)) == 9
    assert "pkg:pypi/nvidia-cuda-nvrtc@13.0.88#nvidia/cu13/lib/libnvrtc.alt.so.13" in purls
