"""Write a PEP 751 `pylock.toml` from a manifest's Python packages.

Spec fields (lock-version, environments, requires-python, extras, dependency-groups,
default-groups, created-by, packages with name, version and exactly one artifact source)
are filled from what is installed; prov's own facts (content fingerprints, interpreter,
dpkg packages, image digests, GPU identity, the manifest digest) go under the `[tool.prov]`
tables the PEP reserves for tools. A package whose artifact hash is not known gets no
invented hash: it is listed with `tool.prov.artifact = "unknown: ..."`, and the lock says
it is incomplete (`tool.prov.complete = false`), which PEP 751 installers will refuse.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lockfiles.artifacts import Artifact, from_direct_url
from lockfiles.errors import LockError
from provenance.model import Manifest

CREATED_BY = "prov-llm"
Finder = Callable[[str, str, "frozenset[str] | None"], list[Artifact]]


@dataclass
class LockResult:
    text: str
    packages: int
    missing_hashes: list[str] = field(default_factory=list)
    sources: dict[str, int] = field(default_factory=dict)


def _dist_info(location: str, name: str, version: str) -> Path | None:
    """The installed `.dist-info` directory of name==version under `location`, if present."""
    from lockfiles.artifacts import normalize

    base = Path(location)
    if not location or not base.is_dir():
        return None
    for info in base.glob("*.dist-info"):
        stem = info.name[: -len(".dist-info")]
        dist_name, _, dist_version = stem.rpartition("-")
        if normalize(dist_name) == normalize(name) and dist_version == version:
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


def write_pylock(manifest: Manifest, finders: list[Finder], lock_dir: Path) -> LockResult:
    """The lock text for `manifest`'s Python packages, artifacts looked up through `finders`."""
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
    found_by_name = _find_all(py["packages"], finders, lock_dir)
    packages = tomlkit.aot()
    missing: list[str] = []
    sources: dict[str, int] = {}
    for name, entry in sorted(py["packages"].items()):
        pkg = tomlkit.table()
        pkg["name"] = name
        tool: dict[str, Any] = {}
        for key in ("fingerprint", "installer"):
            if key in entry:
                tool[key] = entry[key]
        direct = _direct_source(entry, lock_dir)
        if direct and "directory" in direct:
            # an editable install's RECORD names absolute paths: not comparable across checkouts
            tool.pop("fingerprint", None)
        if direct:
            if "vcs" in direct:
                pkg["version"] = entry["version"]
            pkg.update(direct)
            tool["hash-source"] = "not applicable: " + next(iter(direct))
            sources[next(iter(direct))] = sources.get(next(iter(direct)), 0) + 1
        else:
            pkg["version"] = entry["version"]
            found, tags = found_by_name[name]
            if found:
                _add_artifacts(pkg, found)
                tool["hash-source"] = found[0].source
                if tags is None and len(found) > 1:
                    tool["wheel-selected"] = False  # installed WHEEL tags unknown
                kind = found[0].source.split(":", 1)[0]
                sources[kind] = sources.get(kind, 0) + 1
            else:
                missing.append(name)
                tool["artifact"] = (
                    "unknown: no installer record, local wheel or reachable index "
                    "holds this version's file; no hash is invented"
                )
        pkg["tool"] = {"prov": tool}
        packages.append(pkg)
    doc["packages"] = packages
    tool_prov = _tool_facts(manifest)
    tool_prov["complete"] = not missing
    if missing:
        tool_prov["missing-hashes"] = missing
    doc["tool"] = {"prov": tool_prov}
    return LockResult(tomlkit.dumps(doc), len(py["packages"]), missing, sources)


def _find_all(packages: dict[str, Any], finders: list[Finder], lock_dir: Path) -> dict[str, Any]:
    """name -> (artifacts, installed wheel tags), looked up concurrently (index round trips)."""
    from concurrent.futures import ThreadPoolExecutor

    def find(item: tuple[str, dict[str, Any]]) -> tuple[str, Any]:
        name, entry = item
        if _direct_source(entry, lock_dir):
            return name, ([], None)
        tags = wheel_tags(str(entry.get("location", "")), name, entry["version"])
        found = from_direct_url(entry)
        for finder in finders:
            if found:
                break
            found = finder(name, entry["version"], tags)
        return name, (found, tags)

    with ThreadPoolExecutor(max_workers=8) as pool:
        return dict(pool.map(find, sorted(packages.items())))


def _add_artifacts(pkg: Any, found: list[Artifact]) -> None:
    import tomlkit

    wheels = [a for a in found if a.filename.endswith(".whl")]
    if wheels:
        if wheels[0].source.startswith("index:"):
            pkg["index"] = wheels[0].source.split(":", 1)[1]
        aot = tomlkit.aot()
        for a in wheels:
            t = tomlkit.table()
            t["name"] = a.filename
            if a.url:
                t["url"] = a.url
            if a.path:
                t["path"] = a.path
            if a.size is not None:
                t["size"] = a.size
            t["hashes"] = {"sha256": a.sha256}
            aot.append(t)
        pkg["wheels"] = aot
    else:
        a = found[0]
        sdist = {"name": a.filename, "hashes": {"sha256": a.sha256}}
        if a.url:
            sdist["url"] = a.url
        if a.path:
            sdist["path"] = a.path
        pkg["sdist"] = sdist
