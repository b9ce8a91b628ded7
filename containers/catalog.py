"""Which files the catalogers want from a layer walk, and the sections built from them."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from containers.catalogers import cuda, dpkg, os_release, python_dist
from containers.limits import MAX_PYTHON_DISTS, check_count
from containers.walk import CONTENT, NAME, FileView

_PY_DIRS = ("site-packages", "dist-packages")
_DIST_FILES = ("METADATA", "RECORD", "INSTALLER")
_CUDA_JSON = re.compile(r"^usr/local/cuda[^/]*/version\.json$")
OS_RELEASE = ("etc/os-release", "usr/lib/os-release")
STATUS = "var/lib/dpkg/status"
STATUS_D = "var/lib/dpkg/status.d/"
INFO = "var/lib/dpkg/info/"


def _list_filter(data: bytes) -> bytes:
    """Keep only the Python metadata and shared-object lines of a dpkg .list file (who owns
    them): memory stays small."""
    text = data.decode("utf-8", "replace")
    libs = [x for x in text.splitlines() if ".so" in x and cuda.shared_object(x.rsplit("/")[-1])]
    return "\n".join(dpkg.parse_list_owned(text) + libs).encode()


def wants(path: str) -> object:
    """The cataloger interest in one path (called for every regular file: keep it cheap)."""
    parent, _, base = path.rpartition("/")
    if base in _DIST_FILES or base == "PKG-INFO":
        d_parent, _, d_base = parent.rpartition("/")
        if d_base.endswith((".dist-info", ".egg-info")) and d_parent.endswith(_PY_DIRS):
            return CONTENT
        return None
    if base.endswith(".egg-info") and parent.endswith(_PY_DIRS):
        return CONTENT
    if base.endswith(".json"):
        if parent.endswith("conda-meta") or _CUDA_JSON.match(path):
            return CONTENT
        return None
    if base.endswith(".list") and parent == INFO[:-1]:
        return _list_filter
    if ".so" in base and cuda.shared_object(base):  # its owner decides if it is CUDA's
        return NAME
    if path in OS_RELEASE or path == STATUS:
        return CONTENT
    if parent == STATUS_D[:-1] and not base.endswith(".md5sums"):
        return CONTENT
    return None


def wants_verifying(path: str) -> object:
    """`wants`, plus dpkg's md5sums files (the claims file verification checks)."""
    if path.endswith(".md5sums") and path.startswith((INFO, STATUS_D)):
        return CONTENT
    return wants(path)


@dataclass
class DpkgHistory:
    """Which layer introduced each package at its current version (status is rewritten
    by every layer that installs anything, so its own layer says nothing)."""

    introduced: dict[str, tuple[str, int]] = field(default_factory=dict)

    def on_layer(self, index: int, staged: dict[str, bytes]) -> None:
        data = staged.get(STATUS)
        if data is None:
            return
        now = {}
        for pkg in dpkg.parse_status(data.decode("utf-8", "replace")):
            old = self.introduced.get(pkg.key)
            now[pkg.key] = old if old and old[0] == pkg.version else (pkg.version, index)
        self.introduced = now


@dataclass
class PythonHistory:
    """The layer that introduced each dist-info at its current content: a later layer that
    rewrites identical metadata (an opaque directory re-populated) does not re-introduce it."""

    introduced: dict[str, tuple[int, int]] = field(default_factory=dict)

    def on_layer(self, index: int, staged: dict[str, bytes]) -> None:
        for path, data in staged.items():
            if path.endswith(("/METADATA", "/RECORD", "/PKG-INFO")):
                key = hash(data)
                old = self.introduced.get(path)
                if old is None or old[0] != key:
                    self.introduced[path] = (key, index)

    def layer_of(self, path: str, data: bytes, final_layer: int) -> int:
        old = self.introduced.get(path)
        return old[1] if old is not None and old[0] == hash(data) else final_layer


@dataclass
class PythonDist:
    name: str
    location: str  # "/opt/venv/lib/python3.11/site-packages"
    facts: dict[str, Any]
    meta: str = ""  # its metadata: "opt/.../six-1.17.0.dist-info", ".../conda-meta/x.json"


def os_section(view: FileView, history: DpkgHistory, warnings: list[str]) -> dict[str, Any]:
    section: dict[str, Any] = {}
    for path in OS_RELEASE:
        found = view.read(path)
        if found is not None:
            section["release"] = os_release.parse_os_release(found[1].decode("utf-8", "replace"))
            break
    else:
        section["release"] = "unavailable: no os-release file"
    packages: dict[str, Any] = {}
    status = view.files.get(STATUS)
    found: list[tuple[dpkg.DpkgPackage, int]] = []
    if status is not None:
        for pkg in dpkg.parse_status(status[1].decode("utf-8", "replace")):
            found.append((pkg, history.introduced.get(pkg.key, ("", status[0]))[1]))
    for path in sorted(p for p in view.files if p.startswith(STATUS_D)):
        layer, data = view.files[path]
        for pkg in dpkg.parse_status_d_entry(data.decode("utf-8", "replace")):
            found.append((pkg, layer))
    for pkg, layer in found:
        facts: dict[str, Any] = {"version": pkg.version, "arch": pkg.architecture}
        if pkg.source != pkg.name or pkg.source_version != pkg.version:
            facts["source"] = pkg.source
            facts["source_version"] = pkg.source_version
        if pkg.state != "installed":
            facts["state"] = pkg.state
        facts["layer"] = layer
        packages[pkg.key] = facts
    if status is not None or packages:
        section["dpkg"] = packages
    return section


def _owners(view: FileView, dpkg_keys: set[str]) -> dict[str, str]:
    """Python metadata path -> owning Debian package, from the packages' .list files."""
    owners: dict[str, str] = {}
    for path, (_, data) in view.files.items():
        if not (path.startswith(INFO) and path.endswith(".list")):
            continue
        name = path[len(INFO) : -len(".list")]
        if name not in dpkg_keys and name.split(":")[0] not in dpkg_keys:
            continue
        for line in data.decode("utf-8", "replace").splitlines():
            owners[line.lstrip("/")] = name
    return owners


def python_dists(
    view: FileView,
    dpkg_keys: set[str],
    warnings: list[str],
    history: PythonHistory | None = None,
) -> list[PythonDist]:
    """Every dist-info/egg-info (under site- or dist-packages) and conda-meta record; more
    than MAX_PYTHON_DISTS of them is refused before any is parsed."""
    metas = sum(1 for p in view.files if p.endswith(("/METADATA", "/PKG-INFO", ".egg-info")))
    check_count(metas, MAX_PYTHON_DISTS, "python: dist-info and egg-info directories")
    owners = _owners(view, dpkg_keys)
    dists: list[PythonDist] = []
    for path in sorted(view.files):
        layer, data = view.files[path]
        parent, _, base = path.rpartition("/")
        meta_dir = None
        is_meta = base == "METADATA" and parent.endswith(".dist-info")
        if is_meta or (base == "PKG-INFO" and parent.endswith(".egg-info")):
            meta_dir = parent
        elif base.endswith(".egg-info") and parent.endswith(_PY_DIRS):
            meta_dir = path
        elif parent.endswith("conda-meta") and base.endswith(".json"):
            meta = python_dist.parse_conda_meta(data.decode("utf-8", "replace"))
            if meta:
                dists.append(
                    PythonDist(
                        python_dist.normalize_name(meta["name"]),
                        "/" + parent,
                        {"version": meta["version"], "installer": "conda", "layer": layer},
                        path,
                    )
                )
            continue
        if meta_dir is None:
            continue
        hdr = python_dist.headers(data.decode("utf-8", "replace"))
        location = "/" + meta_dir.rpartition("/")[0]
        if "Name" not in hdr or "Version" not in hdr:
            warnings.append(
                f"python: broken distribution at /{meta_dir}: METADATA lacks Name or Version"
            )
            continue
        facts: dict[str, Any] = {"version": hdr["Version"], "location": location}
        installer = view.files.get(f"{meta_dir}/INSTALLER")
        if installer is not None and installer[1].strip():
            facts["installer"] = installer[1].decode("utf-8", "replace").strip()
        record = view.files.get(f"{meta_dir}/RECORD") if meta_dir.endswith(".dist-info") else None
        facts.update(python_dist.record_facts(record[1] if record is not None else None))
        facts["layer"] = history.layer_of(path, data, layer) if history else layer
        if record is not None and history is not None:
            rec_path = f"{meta_dir}/RECORD"
            facts["layer"] = max(facts["layer"], history.layer_of(rec_path, record[1], record[0]))
        owner = owners.get(meta_dir)
        if owner is not None:
            facts["debian_package"] = owner
        name = python_dist.normalize_name(hdr["Name"])
        dists.append(PythonDist(name, location, facts, meta_dir))
    return dists


def dist_rank(d: PythonDist) -> tuple[int, str]:
    """Which copy of a project wins when several environments hold it (lowest first)."""
    return (0 if d.location.endswith("site-packages") else 1, d.location)


def dist_keys(dists: list[PythonDist]) -> list[tuple[str, PythonDist]]:
    """`python:<name>` for the copy that wins, `python:<name>@<location>` for the others."""
    seen: set[str] = set()
    out = []
    for dist in sorted(dists, key=dist_rank):
        key = f"python:{dist.name}"
        out.append((key if dist.name not in seen else f"{key}@{dist.location}", dist))
        seen.add(dist.name)
    return out


def python_section(dists: list[PythonDist]) -> dict[str, Any]:
    """Keyed by normalised name like the host's; when several environments in the image hold
    one project, a virtual environment's copy wins and the others are listed as shadowed."""

    packages: dict[str, Any] = {}
    for dist in sorted(dists, key=dist_rank):
        if dist.name in packages:
            owner = dist.facts.get("debian_package")
            packages[dist.name].setdefault("shadowed", []).append(
                f"{dist.location} ({dist.facts['version']}"
                + (f", Debian package {owner})" if owner else ")")
            )
            continue
        packages[dist.name] = dict(dist.facts)
    locations = sorted({d.location for d in dists})
    return {"packages": packages, "site_packages": locations}


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
    for path in sorted(p for p in view.files if _CUDA_JSON.match(p)):
        layer, data = view.files[path]
        versions = cuda.parse_version_json(data.decode("utf-8", "replace"))
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
