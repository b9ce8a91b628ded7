"""Python distributions in an image's final view: every dist-info, egg-info and conda-meta
record the Python cataloger owns (`catalogers.python_dist.CATALOGER`), read together (METADATA
with its RECORD and INSTALLER), keyed as the host's, with the layer that introduced each."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from containers.catalogers import python_dist
from containers.catalogers.dpkg import INFO
from containers.limits import MAX_PYTHON_DISTS, check_count
from containers.walk import FileView

_PY_DIRS = ("site-packages", "dist-packages")


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
