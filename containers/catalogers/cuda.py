"""The CUDA stack: `/usr/local/cuda*/version.json`, and the CUDA libraries wherever they are
installed, each named by the package that ships it.

Which shared objects are CUDA's is decided by their owner first (`is_cuda_package`: an
`nvidia-*` wheel, a dpkg or conda package of NVIDIA's CUDA libraries), not by a list of
file names: cuDNN's sub-libraries, cuSOLVER, NVRTC, nvJitLink, CUPTI, cuFile, NVSHMEM ...
are named as their wheels ship them. A file no package lists is still named when its
file name is one of the well-known sonames (`LIBRARY`) or it lies under `nvidia/`.
"""

from __future__ import annotations

import re

from containers.catalogers.base import NAME, Cataloger, Glob
from containers.jsondoc import load_content

# well-known sonames: how a library nobody lists is still recognised
LIBRARY = re.compile(
    r"^lib(cudnn|nccl|cublas|cudart|cublasLt|cusparse|cufft)\.so\.(\d+(?:\.\d+)*)$"
)
# any shared object: `libcudnn_ops.so.9`, `libnvrtc-builtins.so.12.8`, `libcheckpoint.so`,
# and NVSHMEM's plugins without the lib prefix (`nvshmem_bootstrap_uid.so.3`)
SHARED_OBJECT = re.compile(
    r"^(?:lib)?([A-Za-z0-9_+-][A-Za-z0-9_.+-]*?)\.so(?:\.(\d+(?:\.\d+)*))?$"
)
# packages that ship CUDA libraries: NVIDIA's wheels (nvidia-cudnn-cu12, nvidia-nccl-cu13),
# Debian/Ubuntu packages from NVIDIA's repository (libcudnn9-cuda-12, libnccl2,
# cuda-cudart-12-4, libcublas-12-4, libnvjitlink-12-4, libcusparselt0), and conda-forge's
# (cuda-nvrtc, libcublas, libcurand, nccl, cudnn)
_CUDA_PYTHON = re.compile(r"^nvidia-")
_CUDA_NATIVE = re.compile(
    r"^(cuda-|libcu|libnccl|libnv(?!idia-)|libnpp|nccl$|cudnn$|cutensor|libcutensor)"
)


def parse_version_json(text: str) -> dict[str, str]:
    """`cuda` and component versions from a toolkit's version.json (empty if malformed)."""
    doc = load_content(text)
    if not isinstance(doc, dict):
        return {}
    out: dict[str, str] = {}
    for key, value in doc.items():
        if isinstance(value, dict) and isinstance(value.get("version"), str):
            out[str(key)] = value["version"]
    return out


def library_version(basename: str) -> tuple[str, str] | None:
    """(library, version) for a well-known versioned soname, else None."""
    m = LIBRARY.match(basename)
    if not m:
        return None
    return m.group(1).lower(), m.group(2)


def shared_object(basename: str) -> tuple[str, str] | None:
    """(library, soname version or "") for any shared-object file name, else None."""
    if ".so" not in basename:
        return None
    m = SHARED_OBJECT.match(basename)
    if not m:
        return None
    return m.group(1).lower(), m.group(2) or ""


def is_cuda_package(key: str) -> bool:
    """True for a package key (`python:nvidia-cudnn-cu12`, `dpkg:libcudnn9-cuda-12`,
    `python:cuda-nvrtc` for a conda record) of a package that ships CUDA libraries."""
    kind, _, name = key.partition(":")
    name = name.split("@", 1)[0].split(":", 1)[0]
    if kind == "python":
        return bool(_CUDA_PYTHON.match(name) or _CUDA_NATIVE.match(name))
    return kind == "dpkg" and bool(_CUDA_NATIVE.match(name))


def under_nvidia(path: str) -> bool:
    """True for a file in a site-packages `nvidia/` tree (NVIDIA's wheels all install there)."""
    return "-packages/nvidia/" in path


def _is_shared_object(path: str) -> bool:
    return shared_object(path.rpartition("/")[2]) is not None


# Shared objects by name only: their owner (a package that lists the file) decides whether
# they are CUDA's (`containers.cuda_stack`).
TOOLKIT = Glob("usr/local/cuda*/version.json", parse=parse_version_json)
CATALOGER = Cataloger(
    "cuda-cataloger", [TOOLKIT, Glob("**/*.so*", keep=NAME, test=_is_shared_object)]
)
