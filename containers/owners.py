"""Who ships a native library: the wheel (RECORD), the dpkg package (`info/*.list`) or the
conda package (`conda-meta/*.json`) that lists the file, read from the final view.

A path a package lists may run through a symlinked directory (a usr-merged `/lib/...` is
`usr/lib/...`), so listed paths are resolved inside the image before they are matched.
"""

from __future__ import annotations

from typing import Any

from containers.catalog import INFO, PythonDist, dist_keys
from containers.verify import conda_listed, record_listed
from containers.walk import FileView


def _python_lists(view: FileView, dists: list[PythonDist]):
    """(key, version, listed paths) of every distribution with a RECORD or conda record."""
    for key, dist in dist_keys(dists):
        version = str(dist.facts.get("version", ""))
        if dist.meta.endswith(".dist-info"):
            record = view.files.get(f"{dist.meta}/RECORD")
            if record is not None:
                yield key, version, record_listed(dist.location.lstrip("/"), record[1])
        elif dist.meta.endswith(".json") and dist.facts.get("installer") == "conda":
            found = view.files.get(dist.meta)
            if found is not None:
                yield key, version, conda_listed(dist.meta.rsplit("/", 2)[0], found[1])


def _dpkg_lists(view: FileView, dpkg: dict[str, Any]):
    """(key, version, listed paths) from the .list files the walk kept (library lines)."""
    for key, facts in dpkg.items():
        for name in (key, key.split(":")[0]):
            found = view.files.get(f"{INFO}{name}.list")
            if found is not None:
                lines = found[1].decode("utf-8", "surrogateescape").splitlines()
                yield f"dpkg:{key}", str(facts.get("version", "")), {x.lstrip("/") for x in lines}
                break


def library_owners(
    view: FileView, dists: list[PythonDist], dpkg: dict[str, Any], paths: set[str]
) -> dict[str, dict[str, str]]:
    """Library path -> {package, version} for every path of `paths` a package lists."""
    out: dict[str, dict[str, str]] = {}
    if not paths:
        return out
    for key, version, listed in [*_dpkg_lists(view, dpkg), *_python_lists(view, dists)]:
        for path in listed:
            real = view.resolve(path) if path not in paths else path
            if real in paths and real not in out:
                out[real] = {"package": key, "version": version}
    return out
