"""The `host` section: who, where and when. All context: none of it changes numerics."""

from __future__ import annotations

import datetime as dt
import os
import socket
from pathlib import Path
from typing import TYPE_CHECKING

from provenance import __version__

if TYPE_CHECKING:  # annotations only (this module uses postponed annotations)
    from provenance.model.sections import HostSection


def _read(path: str) -> str:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return ""


def in_container() -> str:
    if Path("/.dockerenv").exists():
        return "docker"
    if Path("/run/.containerenv").exists():
        return "podman"
    cgroup = _read("/proc/1/cgroup")
    for marker in ("docker", "kubepods", "containerd", "lxc"):
        if marker in cgroup:
            return marker
    return "none detected"


def collect(warnings: list[str]) -> HostSection:
    return {
        "hostname": socket.gethostname(),
        "boot_id": _read("/proc/sys/kernel/random/boot_id"),
        "user": os.environ.get("USER") or str(os.getuid()),
        "pid": os.getpid(),
        "cwd": os.getcwd(),
        "timestamp": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "container": in_container(),
        "prov_version": __version__,
    }
