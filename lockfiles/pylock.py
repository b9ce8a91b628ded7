"""Write a PEP 751 `pylock.toml` from a manifest's Python packages.

Spec fields (lock-version, environments, requires-python, extras, dependency-groups,
default-groups, created-by, packages with name, version and exactly one artifact source)
are filled from what is installed; prov's own facts (content fingerprints, interpreter,
dpkg packages, image digests, GPU identity, the manifest digest) go under the `[tool.prov]`
tables the PEP reserves for tools.

Each package says whether its installer recorded where it came from (`tool.prov.origin`):
only a direct URL or path install does (PEP 610 `direct_url.json`), and its artifact is that
one (`[packages.archive]`). For an index or `--find-links` install (`origin = "unrecorded"`)
the lock names the file an index serves for that name, version and wheel tags, or a local
file whose contents give the installed fingerprint; never a local path merely because a file
of that name is there. A package whose artifact is not known gets no invented hash: it is
listed with `tool.prov.artifact = "unknown: ..."`, and the lock says it is incomplete
(`tool.prov.complete = false`), which PEP 751 installers will refuse.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from lockfiles.artifacts import Artifact, Fingerprint, from_direct_url
from lockfiles.errors import LockError
from provenance.model import Manifest

CREATED_BY = "prov-llm"
Finder = Callable[[str, str, "frozenset[str] | None"], list[Artifact]]


class Origin(StrEnum):
    """`[packages.tool.prov] origin`: did the installer record where the distribution came
    from?"""

    RECORDED = "direct_url"  # yes: PEP 610 direct_url.json (a URL, path, VCS or directory)
    UNRECORDED = "unrecorded"  # no: an index or --find-links install (pip and uv say nothing)


@dataclass
class LockResult:
    text: str
    packages: int
    missing_hashes: list[str] = field(default_factory=list)
    sources: dict[str, int] = field(default_factory=dict)


def _dist_info(location: str, name: str, version: str) -> Path | None:
    """The installed `.dist-info` directory of name==version under `location`, if present."""
    from packaging.utils import canonicalize_name

    base = Path(location)
    if not location or not base.is_dir():
        return None
    for info in base.glob("*.dist-info"):
        stem = info.name[: -len(".dist-info")]
        dist_name, _, dist_version = stem.rpartition("-")
        if canonicalize_name(dist_name) == canonicalize_name(name) and dist_version == version:
            return info
    return None


def wheel_tags(location: str, name: str, version: str) -> frozenset[str] | None:
    """Tags from the installed `.dist-info/WHEEL`, if that directory is on this machine."""
    info = _dist_info(location, name, version)
    try:
        lines = (info / "WHEEL").read_text().splitlines() if info else []
    except OSError:
        return None
    tags = frozenset(line.split(":", 1)[1].strip() for line in lines if line.startswith("Tag:"))
    return tags or None


def installed_requires_python(packages: dict[str, Any]) -> list[str]:
    """Each installed distribution's `Requires-Python` (METADATA), where it states one."""
    found = []
    for name, entry in sorted(packages.items()):
        info = _dist_info(str(entry.get("location", "")), name, str(entry.get("version", "")))
        try:
            text = (info / "METADATA").read_text(errors="replace") if info else ""
        except OSError:
            continue
        for line in text.splitlines():
            if not line:
                break
            if line.lower().startswith("requires-python:"):
                found.append(line.split(":", 1)[1].strip())
    return found


def _below(version: str, floor: Any) -> bool:
    """True when every version `!=version` excludes lies below `floor` (a redundant `!=`)."""
    from packaging.version import InvalidVersion, Version

    try:
        top = Version(version.removesuffix(".*"))
    except InvalidVersion:
        return False
    if version.endswith(".*"):  # !=3.2.* excludes 3.2.x: below 3.7 when 3.3 <= 3.7
        release = list(top.release)
        release[-1] += 1
        return Version(".".join(map(str, release))) <= floor
    return top < floor


def requires_python(python_version: str, stated: list[str]) -> str:
    """The lock's `requires-python`: the intersection of what the installed distributions
    require (the highest lower bound, the lowest upper bound, every exclusion), or the
    interpreter's minor series (`>=3.11,<3.12`) when none states a requirement. Never the
    exact patch version: a lock made on 3.11.7 installs on 3.11.2."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import Version

    lowest: dict[str, Any] = {}
    others: set[str] = set()
    for text in stated:
        try:
            specs = SpecifierSet(text)
        except InvalidSpecifier:
            continue  # pip installed it anyway; an unreadable bound constrains nothing
        for spec in specs:
            if spec.operator in (">=", "<") and "*" not in spec.version:
                keep = lowest.get(spec.operator)
                newer = Version(spec.version)
                if keep is None or (newer > keep if spec.operator == ">=" else newer < keep):
                    lowest[spec.operator] = newer
            else:
                others.add(str(spec))
    if not lowest and not others:
        major, minor = (int(x) for x in python_version.split(".")[:2])
        return f">={major}.{minor},<{major}.{minor + 1}"
    floor = lowest.get(">=")
    others = {o for o in others if not (floor and o.startswith("!=") and _below(o[2:], floor))}
    parts = [f"{op}{v}" for op, v in sorted(lowest.items())] + sorted(others)
    return str(SpecifierSet(",".join(parts)))


def environment_marker(python: dict[str, Any], os_facts: dict[str, Any]) -> str:
    system = str(os_facts.get("system", "Linux"))
    parts = [
        f"sys_platform == '{'linux' if system == 'Linux' else system.lower()}'",
        f"platform_machine == '{os_facts.get('machine', '')}'",
        f"implementation_name == '{python.get('implementation', 'cpython')}'",
        # the minor series: wheels are built per CPython minor, not per patch release
        f"python_version == '{'.'.join(str(python.get('version', '')).split('.')[:2])}'",
    ]
    return " and ".join(parts)


def _direct_source(entry: dict[str, Any], lock_dir: Path) -> dict[str, Any] | None:
    """`packages.vcs` / `packages.directory` for PEP 610 direct-URL installs."""
    direct = entry.get("direct_url") or {}
    url = str(direct.get("url", ""))
    if direct.get("vcs_vcs") and direct.get("vcs_commit_id"):
        vcs = {"type": direct["vcs_vcs"], "url": url, "commit-id": direct["vcs_commit_id"]}
        if direct.get("vcs_requested_revision"):
            vcs["requested-revision"] = direct["vcs_requested_revision"]
        return {"vcs": vcs}
    if url.startswith("file://") and "editable" in direct:
        path = url[len("file://") :]
        rel = os.path.relpath(path, lock_dir) if os.path.isabs(path) else path
        return {"directory": {"path": Path(rel).as_posix(), "editable": bool(direct["editable"])}}
    return None


def _tool_facts(manifest: Manifest) -> dict[str, Any]:
    facts = manifest.facts
    tool: dict[str, Any] = {"manifest-digest": manifest.digest()}
    py = facts.get("python")
    if isinstance(py, dict):
        tool["python"] = {
            k: py[k] for k in ("implementation", "version", "abi", "platform") if k in py
        }
    os_facts = facts.get("os")
    if isinstance(os_facts, dict):
        if isinstance(os_facts.get("release"), dict):
            tool["os-release"] = dict(os_facts["release"])
        if isinstance(os_facts.get("dpkg"), dict):
            tool["dpkg"] = {k: v.get("version", "") for k, v in sorted(os_facts["dpkg"].items())}
    image = facts.get("image")
    if isinstance(image, dict):
        tool["image"] = {k: v for k, v in image.items() if isinstance(v, str)}
    gpu = facts.get("gpu")
    if isinstance(gpu, dict):
        g = {k: gpu[k] for k in ("driver", "cuda_driver", "count") if k in gpu}
        for idx, dev in (gpu.get("devices") or {}).items():
            g[f"device-{idx}"] = {k: dev[k] for k in ("name", "compute_capability") if k in dev}
        tool["gpu"] = g
    return tool


@dataclass
class Sources:
    """Where `write_pylock` looks for a package's artifact once `direct_url.json` names none:
    the indexes in order (the first that lists the file names it), then local directories
    (a file there only when installing it gives the installed content fingerprint)."""

    indexes: list[Finder] = field(default_factory=list)
    local: list[Finder] = field(default_factory=list)
    fingerprint: Fingerprint | None = None  # checks a local file direct_url.json names
    on_package: Callable[[str], None] = lambda name: None  # progress


@dataclass(frozen=True)
class Found:
    artifacts: list[Artifact]
    tags: frozenset[str] | None
    origin: Origin
    why: str = ""  # without artifacts: what was asked and why nothing answered


def require_python(manifest: Manifest, label: str) -> None:
    """A manifest with an interpreter and packages to lock or verify; refused otherwise
    (`label`: what it was taken of, as the source resolver names it)."""
    py = manifest.facts.get("python")
    if isinstance(py, str):  # "unavailable: ..." (the collector could not run it)
        raise LockError(f"cannot inspect the {label}: {py}")
    if not isinstance(py, dict) or not py.get("packages") or not py.get("version"):
        raise LockError(f"{label}: no Python interpreter or packages found; nothing to lock")


def write_pylock(manifest: Manifest, sources: Sources, lock_dir: Path) -> LockResult:
    """The lock text for `manifest`'s Python packages, artifacts looked up in `sources`."""
    import tomlkit

    facts = manifest.facts
    py = facts.get("python")
    if not isinstance(py, dict) or not isinstance(py.get("packages"), dict):
        raise LockError("the manifest has no Python packages to lock (python section unavailable)")
    os_facts = facts.get("os") if isinstance(facts.get("os"), dict) else {}
    doc = tomlkit.document()
    doc["lock-version"] = "1.0"
    doc["environments"] = [environment_marker(py, os_facts)]
    doc["requires-python"] = requires_python(
        str(py.get("version", "")), installed_requires_python(py["packages"])
    )
    doc["extras"] = []
    doc["dependency-groups"] = []
    doc["default-groups"] = []
    doc["created-by"] = CREATED_BY
    found_by_name = _find_all(py["packages"], sources, lock_dir)
    packages = tomlkit.aot()
    result = LockResult("", len(py["packages"]))
    for name, entry in sorted(py["packages"].items()):
        packages.append(_package(name, entry, found_by_name[name], lock_dir, result))
    doc["packages"] = packages
    tool_prov = _tool_facts(manifest)
    tool_prov["complete"] = not result.missing_hashes
    if result.missing_hashes:
        tool_prov["missing-hashes"] = result.missing_hashes
    doc["tool"] = {"prov": tool_prov}
    result.text = tomlkit.dumps(doc)
    return result


def _package(name: str, entry: dict[str, Any], found: Found | None, lock_dir: Path,
             result: LockResult) -> Any:
    """One `[[packages]]` table; counts its source (or its absence) in `result`."""
    import tomlkit

    pkg = tomlkit.table()
    pkg["name"] = name
    tool: dict[str, Any] = {k: entry[k] for k in ("fingerprint", "installer") if k in entry}
    direct = _direct_source(entry, lock_dir)
    if direct:
        kind = _add_source_tree(pkg, tool, entry, direct)
    else:  # `_find_all` looked every other package up
        pkg["version"] = entry["version"]
        kind = _add_found(pkg, tool, found or Found([], None, Origin.UNRECORDED), lock_dir)
    if kind:
        result.sources[kind] = result.sources.get(kind, 0) + 1
    else:
        result.missing_hashes.append(name)
    pkg["tool"] = {"prov": tool}
    return pkg


def _add_source_tree(pkg: Any, tool: dict[str, Any], entry: dict[str, Any],
                     direct: dict[str, Any]) -> str:
    """A VCS checkout or a directory, as direct_url.json recorded it; returns its kind."""
    if "directory" in direct:
        # an editable install's RECORD names absolute paths: not comparable across checkouts
        tool.pop("fingerprint", None)
    if "vcs" in direct:
        pkg["version"] = entry["version"]
    pkg.update(direct)
    kind = next(iter(direct))
    tool["origin"] = Origin.RECORDED.value
    tool["hash-source"] = "not applicable: " + kind
    return kind


def _add_found(pkg: Any, tool: dict[str, Any], found: Found, lock_dir: Path) -> str:
    """The artifacts found, or the note that none was; returns the source kind ('' for
    none)."""
    tool["origin"] = found.origin.value
    if not found.artifacts:
        tool["artifact"] = f"unknown: {found.why}; no hash or location is invented"
        return ""
    first = found.artifacts[0]
    _add_artifacts(pkg, found.artifacts, lock_dir)
    tool["hash-source"] = first.source
    if first.fingerprint is not None:
        tool["content-checked"] = True  # installing it gives the installed fingerprint
    if found.tags is None and len(found.artifacts) > 1:
        tool["wheel-selected"] = False  # installed WHEEL tags unknown
    return first.source.split(":", 1)[0]


def _same_content(artifact: Artifact, installed: Any) -> bool:
    return artifact.fingerprint is not None and artifact.fingerprint == installed


def _unlike(artifact: Artifact) -> str:
    if artifact.fingerprint is None:
        return f"{artifact.path} cannot be compared with the installed files (no wheel RECORD)"
    return f"{artifact.path} holds other files than the installed ones"


def _find_one(name: str, entry: dict[str, Any], sources: Sources) -> Found:
    """The artifact of one installed distribution, and whether its installer recorded it."""
    sources.on_package(name)
    version = str(entry["version"])
    tags = wheel_tags(str(entry.get("location", "")), name, version)
    installed = entry.get("fingerprint")
    recorded = from_direct_url(entry, sources.fingerprint)
    if recorded:
        first = recorded[0]
        if first.source == "direct_url" or _same_content(first, installed):
            return Found(recorded, tags, Origin.RECORDED)
        return Found([], tags, Origin.RECORDED, "direct_url.json names " + _unlike(first))
    url = (entry.get("direct_url") or {}).get("url")
    if url:
        return Found([], tags, Origin.RECORDED,
                     f"direct_url.json names {url} with no hash, and it is not a file here")
    for find in sources.indexes:
        found = find(name, version, tags)
        if found:
            return Found(found, tags, Origin.UNRECORDED)
    unlike: list[str] = []
    for find in sources.local:
        found = find(name, version, tags)
        same = [a for a in found if _same_content(a, installed)]
        if same:
            return Found(same, tags, Origin.UNRECORDED)
        unlike += [_unlike(a) for a in found]
    why = "the installer recorded no origin and no index asked lists this version's file"
    return Found([], tags, Origin.UNRECORDED, "; ".join([why, *unlike]))


def _find_all(packages: dict[str, Any], sources: Sources, lock_dir: Path) -> dict[str, Any]:
    """name -> Found (None for a VCS or directory source), looked up concurrently (index
    round trips)."""
    from concurrent.futures import ThreadPoolExecutor

    def find(item: tuple[str, dict[str, Any]]) -> tuple[str, Found | None]:
        name, entry = item
        if _direct_source(entry, lock_dir):
            return name, None
        return name, _find_one(name, entry, sources)

    with ThreadPoolExecutor(max_workers=8) as pool:
        return dict(pool.map(find, sorted(packages.items())))


def _lock_path(path: str, lock_dir: Path) -> str:
    """A file's path as the lock names it: relative to the lock when below it (PEP 751:
    a relative path is relative to the lock file), else absolute."""
    rel = os.path.relpath(path, lock_dir)
    return Path(rel).as_posix() if not rel.startswith("..") else path


def _file_table(a: Artifact, lock_dir: Path, with_name: bool) -> Any:
    import tomlkit

    t = tomlkit.inline_table() if not with_name else tomlkit.table()
    if with_name:
        t["name"] = a.filename
    if a.url:
        t["url"] = a.url
    if a.path:
        t["path"] = _lock_path(a.path, lock_dir)
    if a.size is not None:
        t["size"] = a.size
    t["hashes"] = {"sha256": a.sha256}
    return t


def _add_artifacts(pkg: Any, found: list[Artifact], lock_dir: Path) -> None:
    import tomlkit

    first = found[0]
    if first.source.startswith("direct_url"):  # PEP 751: a direct URL reference is an archive
        pkg["archive"] = _file_table(first, lock_dir, with_name=False)
        return
    if first.source.startswith("index:"):
        pkg["index"] = first.source.split(":", 1)[1]
    wheels = [a for a in found if a.filename.endswith(".whl")]
    if wheels:
        aot = tomlkit.aot()
        for a in wheels:
            aot.append(_file_table(a, lock_dir, with_name=True))
        pkg["wheels"] = aot
    else:
        pkg["sdist"] = _file_table(first, lock_dir, with_name=True)
