"""The `cuda` section of an image: toolkits (`usr/local/cuda*/version.json`), the CUDA
libraries wherever they are installed (each with the package that lists the file), and the
CUDA packages; the names and formats are the CUDA cataloger's (`catalogers.cuda`)."""

from __future__ import annotations

import re
from typing import Any

from containers.catalog import CATALOG
from containers.catalogers import cuda
from containers.walk import FileView


def _cuda_library(path: str, owner: dict[str, str] | None) -> tuple[str, str] | None:
    """(library, soname version) when `path` is one of the CUDA stack's shared objects:
    its owner is a CUDA package, or (nobody lists it) its name or place says so."""
    base = path.rsplit("/", 1)[-1]
    found = cuda.shared_object(base)
    if found is None:
        return None
    if owner is not None:
        if cuda.is_cuda_package(owner["package"]):
            return found
        return cuda.library_version(base)  # torch's bundled libcudart.so.12 stays named
    if cuda.under_nvidia(path):
        return found
    return cuda.library_version(base)


def cuda_section(
    view: FileView,
    os_sec: dict[str, Any],
    py: dict[str, Any],
    owners: dict[str, dict[str, str]] | None = None,
) -> dict[str, Any]:
    """Toolkits, libraries (by file name, each path with the package that ships it, when
    one lists it: `owners`) and the CUDA packages."""
    section: dict[str, Any] = {}
    toolkits: dict[str, Any] = {}
    for path in CATALOG.paths(view, cuda.TOOLKIT):
        layer, data = view.files[path]
        versions = cuda.TOOLKIT.parse(data.decode("utf-8", "replace"))
        if versions:
            home = "/" + path.rpartition("/")[0]
            entry: dict[str, Any] = {"path": home, "layer": layer}
            entry.update({k: v for k, v in versions.items()})
            toolkits[home.rsplit("/", 1)[-1]] = entry
    if toolkits:
        section["toolkit"] = toolkits
    libs: dict[str, Any] = {}
    for path in sorted(view.names):
        found = _cuda_library(path, (owners or {}).get(path))
        if found is None:
            continue
        lib, version = found
        entry = libs.setdefault(lib, {"versions": [], "paths": []})
        if version not in entry["versions"]:
            entry["versions"].append(version)
        entry["paths"].append("/" + path)
        if owners and path in owners:
            entry.setdefault("owners", {})["/" + path] = dict(owners[path])
    for entry in libs.values():
        # the most specific version (libcudnn.so.9.1.0 over libcudnn.so.9)
        entry["version"] = max(entry["versions"], key=lambda v: (v.count("."), v))
        entry["versions"].sort()
    if libs:
        section["libraries"] = libs
    pkgs: dict[str, str] = {}
    for name, facts in (os_sec.get("dpkg") or {}).items():
        if re.match(r"^(libcudnn|libnccl|libcublas|cuda-cudart|cuda-toolkit)", name):
            pkgs[f"dpkg:{name}"] = facts["version"]
    for name, facts in (py.get("packages") or {}).items():
        if name.startswith("nvidia-"):
            pkgs[f"python:{name}"] = facts["version"]
    if pkgs:
        section["packages"] = pkgs
    return section
