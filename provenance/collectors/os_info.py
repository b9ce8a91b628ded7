"""The `os` section: os-release, kernel, the libc actually loaded, dpkg and apk packages."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Any

from containers.catalogers import OS_RELEASE_PATHS, parse_os_release
from provenance.collectors import stamped


def _libc() -> dict[str, str]:
    # confstr asks the loaded glibc itself; platform.libc_ver() greps the binary.
    try:
        name, _, version = os.confstr("CS_GNU_LIBC_VERSION").partition(" ")  # type: ignore[arg-type]
        return {"name": name, "version": version}
    except (ValueError, OSError, AttributeError):
        import platform

        name, version = platform.libc_ver()
        return {"name": name or "unknown", "version": version or "unknown"}


def dpkg_packages(root: Path, warnings: list[str]) -> dict[str, Any] | None:
    """Packages from `var/lib/dpkg/status` and `status.d/*` under `root`; None if no dpkg."""
    # the parser is imported only when it runs: a kept parse (host_dpkg_packages) needs none
    from containers.catalogers import parse_status, parse_status_d_entry

    admin = root / "var/lib/dpkg"
    status = admin / "status"
    status_d = admin / "status.d"
    if not status.exists() and not status_d.is_dir():
        return None
    found = []
    if status.exists():
        try:
            found.extend(parse_status(status.read_text(encoding="utf-8", errors="replace")))
        except OSError as exc:
            warnings.append(f"os: cannot read {status}: {exc.strerror}")
            return {"error": f"unreadable: {exc.strerror}"}
    if status_d.is_dir():
        for entry in sorted(status_d.iterdir()):
            if entry.name.endswith(".md5sums"):
                continue
            try:
                found.extend(
                    parse_status_d_entry(entry.read_text(encoding="utf-8", errors="replace"))
                )
            except OSError as exc:
                warnings.append(f"os: cannot read {entry}: {exc.strerror}")
    return {pkg.key: pkg.facts() for pkg in found}


def _dpkg_inputs(root: Path) -> list[str]:
    """What `dpkg_packages` reads, and the code that parses it."""
    import sys

    from containers.catalogers import parse_status

    parser = sys.modules[parse_status.__module__].__file__ or ""
    admin = root / "var/lib/dpkg"
    paths = [str(admin / "status"), str(admin / "status.d"), __file__, parser]
    with contextlib.suppress(OSError):
        paths += [str(admin / "status.d" / n) for n in os.listdir(admin / "status.d")]
    return paths


def host_dpkg_packages(warnings: list[str], root: Path = Path("/")) -> dict[str, Any] | None:
    """`dpkg_packages` of a host's root, kept (`stamped`) until the database changes:
    parsing the status file is most of the os collector (bench/bench_startup.py)."""
    path = stamped.entry_path("dpkg", [str(root)])
    kept = stamped.load(path)
    if isinstance(kept, dict) and "packages" in kept:
        warnings.extend(kept.get("warnings", []))
        return kept["packages"]
    started_ns, found = time.time_ns(), []
    packages = dpkg_packages(root, found)
    warnings.extend(found)
    stamped.save(path, {"packages": packages, "warnings": found},
                 stamped.stamps(_dpkg_inputs(root)), started_ns)
    return packages


def apk_packages(root: Path, warnings: list[str]) -> dict[str, Any] | None:
    """Packages from apk's installed database under `root` (the image cataloger's parser);
    None if there is none."""
    db = root / "lib/apk/db/installed"
    if not db.exists():
        return None
    from containers.catalogers import parse_installed  # only where there is a database

    try:
        text = db.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        warnings.append(f"os: cannot read {db}: {exc.strerror}")
        return {"error": f"unreadable: {exc.strerror}"}
    return {pkg.key: pkg.facts() for pkg in parse_installed(text)}


def collect(warnings: list[str], root: Path = Path("/")) -> dict[str, Any]:
    section: dict[str, Any] = {}
    for candidate in OS_RELEASE_PATHS:
        path = root / candidate
        if path.exists():
            section["release"] = parse_os_release(
                path.read_text(encoding="utf-8", errors="replace")
            )
            break
    else:
        section["release"] = "unavailable: no os-release file"
    uname = os.uname()  # what platform.uname() reads on Linux, without importing platform
    section["system"] = uname.sysname
    section["machine"] = uname.machine
    section["kernel"] = {"release": uname.release, "version": uname.version}
    section["libc"] = _libc()
    # the host's own database is kept between snapshots; an image's unpacked root is not
    dpkg = host_dpkg_packages(warnings) if root == Path("/") else dpkg_packages(root, warnings)
    if dpkg is not None:
        section["dpkg"] = dpkg
    apk = apk_packages(root, warnings)
    if apk is not None:
        section["apk"] = apk
    return section
