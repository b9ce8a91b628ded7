"""Who ships a native library: the wheel (RECORD), the dpkg package (`info/*.list`), the apk
package (its files in apk's database) or the conda package (`conda-meta/*.json`) that lists
the file, read from the final view.

A path a package lists may run through a symlinked directory (a usr-merged `/lib/...` is
`usr/lib/...`), so listed paths are resolved inside the image before they are matched.
"""

from __future__ import annotations

from typing import Any

from containers.catalogers.dpkg import INFO
from containers.dists import PythonDist, dist_keys
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


def _dpkg_lists(view: FileView, packages: list[tuple[Any, int]]):
    """(key, version, listed paths) from the .list files the walk kept (library lines)."""
    for pkg, _ in packages:
        for name in (pkg.key, pkg.key.split(":")[0]):
            found = view.files.get(f"{INFO}{name}.list")
            if found is not None:
                lines = found[1].decode("utf-8", "surrogateescape").splitlines()
                yield f"dpkg:{pkg.key}", pkg.version, {x.lstrip("/") for x in lines}
                break


def _apk_lists(packages: list[tuple[Any, int]]):
    """(key, version, listed paths) from apk's database (every file of every package)."""
    for pkg, _ in packages:
        yield f"apk:{pkg.key}", pkg.version, {path for path, _ in pkg.files}


def library_owners(
    view: FileView, dists: list[PythonDist], databases: dict[str, list], paths: set[str]
) -> dict[str, dict[str, str]]:
    """Library path -> {package, version} for every path of `paths` a package lists;
    `databases`: the OS databases' (package, layer) lists (`catalog.os_section`)."""
    out: dict[str, dict[str, str]] = {}
    if not paths:
        return out
    lists = [*_dpkg_lists(view, databases.get("dpkg", [])),
             *_apk_lists(databases.get("apk", [])), *_python_lists(view, dists)]
    for key, version, listed in lists:
        for path in listed:
            real = view.resolve(path) if path not in paths else path
            if real in paths and real not in out:
                out[real] = {"package": key, "version": version}
    return out
