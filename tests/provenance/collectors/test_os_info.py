"""The OS collector against dpkg-query, the tool nobody here wrote."""

from __future__ import annotations

import subprocess
from pathlib import Path

from provenance.collectors import os_info


def dpkg_query(admindir: str | None = None) -> dict[str, str]:
    cmd = ["dpkg-query", "-W", "-f", "${binary:Package}\t${Version}\t${db:Status-Status}\n"]
    if admindir:
        cmd.insert(1, f"--admindir={admindir}")
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    present = {}
    for line in out.splitlines():
        name, version, state = line.split("\t")
        if state not in ("not-installed", "config-files"):
            present[name] = version
    return present


def test_dpkg_set_equals_dpkg_query_on_this_machine():
    status = Path("/var/lib/dpkg/status")
    for _attempt in range(5):  # an apt run elsewhere on the machine may change the database
        before = status.stat().st_mtime_ns
        warnings: list[str] = []
        section = os_info.collect(warnings)
        expected = dpkg_query()
        if status.stat().st_mtime_ns == before:
            break
    assert {k: v["version"] for k, v in section["dpkg"].items()} == expected
    assert warnings == []


STATUS = """\
Package: kept
Status: install ok installed
Architecture: amd64
Version: 1.0-1
Source: kept-src (1.0-0.1)

Package: removed-with-config
Status: deinstall ok config-files
Architecture: amd64
Version: 2.0

Package: marked-for-removal
Status: deinstall ok installed
Architecture: all
Version: 3.0

Package: libfoo1
Status: install ok installed
Architecture: amd64
Multi-Arch: same
Version: 4.0
Description: a library
 with a continuation line
"""


def test_synthetic_admindir_matches_dpkg_query(tmp_path):
    admin = tmp_path / "var/lib/dpkg"
    (admin / "info").mkdir(parents=True)
    (admin / "updates").mkdir()
    (admin / "status").write_text(STATUS)
    (admin / "available").write_text("")
    packages = os_info.dpkg_packages(tmp_path, [])
    assert {k: v["version"] for k, v in packages.items()} == dpkg_query(str(admin))
    assert packages["kept"]["source"] == "kept-src" and packages["kept"]["source_version"] == "1.0-0.1"
    assert "removed-with-config" not in packages
    assert "libfoo1:amd64" in packages


def test_distroless_status_d(tmp_path):
    status_d = tmp_path / "var/lib/dpkg/status.d"
    status_d.mkdir(parents=True)
    (status_d / "base-files").write_text("Package: base-files\nVersion: 12.4\nArchitecture: amd64\n")
    (status_d / "base-files.md5sums").write_text("abc  etc/debian_version\n")
    packages = os_info.dpkg_packages(tmp_path, [])
    assert packages == {"base-files": {"version": "12.4", "arch": "amd64"}}


def test_unreadable_status_is_recorded_not_raised(tmp_path):
    (tmp_path / "var/lib/dpkg/status").mkdir(parents=True)  # a directory: read fails
    warnings: list[str] = []
    section = os_info.collect(warnings, root=tmp_path)
    assert section["dpkg"]["error"].startswith("unreadable")
    assert any("cannot read" in w for w in warnings)


def test_os_release_and_libc():
    section = os_info.collect([])
    text = Path("/etc/os-release").read_text()
    assert f'ID={section["release"]["id"]}' in text
    ldd = subprocess.run(["ldd", "--version"], capture_output=True, text=True).stdout
    assert section["libc"]["version"] in ldd.splitlines()[0]
