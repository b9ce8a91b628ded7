"""The Python collector against pip, the tool nobody here wrote."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from provenance.collectors import python_env


def pip_list(python: str, cwd: Path) -> dict[str, str]:
    out = subprocess.run([python, "-m", "pip", "list", "--format", "json"], capture_output=True,
                         text=True, check=True, cwd=cwd).stdout
    return {python_env.normalize_name(p["name"]): p["version"] for p in json.loads(out)}


def test_package_set_equals_pip_list(tmp_path):
    expected = pip_list(sys.executable, tmp_path)
    # the same sys.path pip sees when started from tmp_path, without the cwd entry
    paths = json.loads(subprocess.run(
        [sys.executable, "-c", "import sys, json; print(json.dumps([p for p in sys.path if p]))"],
        capture_output=True, text=True, check=True, cwd=tmp_path).stdout)
    got = python_env.collect(paths)["section"]["packages"]
    assert {name: entry["version"] for name, entry in got.items()} == expected


def test_foreign_interpreter_equals_its_pip_list(tmp_path):
    """`--python` inspects another interpreter through its own sys.path."""
    from provenance.snapshot import SnapshotOptions, take_snapshot

    base = shutil.which("python3") or sys.executable
    target = tmp_path / "venv"
    subprocess.run([base, "-m", "venv", str(target)], check=True)
    python = str(target / "bin" / "python")
    manifest, _ = take_snapshot(SnapshotOptions(python=python))
    packages = manifest.facts["python"]["packages"]
    assert {n: e["version"] for n, e in packages.items()} == pip_list(python, tmp_path)
    assert manifest.facts["python"]["executable"] == python


def make_dist(site: Path, name: str, version: str, files: dict[str, bytes] | None = None,
              metadata: bool = True, direct_url: dict | None = None) -> Path:
    import base64
    import hashlib

    info = site / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    if metadata:
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\n")
    rows = []
    for rel, data in (files or {}).items():
        path = site / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        rows.append(f"{rel},sha256={digest},{len(data)}")
    if direct_url is not None:
        (info / "direct_url.json").write_text(json.dumps(direct_url))
    rows.append(f"{info.name}/RECORD,,")
    (info / "RECORD").write_text("\n".join(rows) + "\n")
    return info


def test_broken_dist_info_is_a_warning_not_a_crash(tmp_path):
    make_dist(tmp_path, "good", "1.0", {"good/__init__.py": b"x = 1\n"})
    make_dist(tmp_path, "broken", "2.0", metadata=False)
    result = python_env.collect([str(tmp_path)])
    assert list(result["section"]["packages"]) == ["good"]
    assert any("broken-2.0.dist-info" in w and "no METADATA" in w for w in result["warnings"])


def test_verify_files_reports_an_edited_file(tmp_path):
    make_dist(tmp_path, "pkg", "1.0", {"pkg/__init__.py": b"a = 1\n", "pkg/core.py": b"b = 2\n"})
    clean = python_env.collect([str(tmp_path)], verify=True)
    assert "modified_files" not in clean["section"]["packages"]["pkg"]
    assert clean["stats"]["files_verified"] == 2
    (tmp_path / "pkg/core.py").write_bytes(b"b = 3\n")
    (tmp_path / "pkg/__init__.py").unlink()
    dirty = python_env.collect([str(tmp_path)], verify=True)["section"]["packages"]["pkg"]
    assert dirty["modified_files"] == ["pkg/core.py"]
    assert dirty["missing_files"] == ["pkg/__init__.py"]


def _pip_install_six(target: Path) -> None:
    """pip installs six 1.16.0 by name, as from an index, from the wheel the test cache
    downloaded once (tests/installer_tools.py): no index is asked at test time."""
    from tests.installer_tools import wheel

    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                    "--find-links", str(wheel("six==1.16.0").parent), "--target", str(target),
                    "six==1.16.0"], check=True, capture_output=True)


def test_verify_files_on_a_real_pip_install(tmp_path):
    """pip writes RECORD; editing one installed file must be caught."""
    target = tmp_path / "site"
    _pip_install_six(target)
    result = python_env.collect([str(target)], verify=True)
    assert result["section"]["packages"]["six"]["version"] == "1.16.0"
    assert "modified_files" not in result["section"]["packages"]["six"]
    with open(target / "six.py", "a") as fh:
        fh.write("# edited\n")
    result = python_env.collect([str(target)], verify=True)
    assert result["section"]["packages"]["six"]["modified_files"] == ["six.py"]


def test_fingerprint_ignores_install_location(tmp_path):
    """Two installs of one wheel fingerprint the same; the raw RECORD digest may differ."""
    fps = []
    for where in ("a", "b"):
        target = tmp_path / where
        _pip_install_six(target)
        fps.append(python_env.collect([str(target)])["section"]["packages"]["six"]["fingerprint"])
    assert fps[0] == fps[1] and fps[0].startswith("sha256:")


def test_direct_url_credentials_are_stripped(tmp_path):
    make_dist(tmp_path, "private", "0.1", direct_url={
        "url": "https://deploy:s3cr3tPassw0rd@git.example.com/org/private.git",
        "vcs_info": {"vcs": "git", "commit_id": "0123456789abcdef0123456789abcdef01234567"},
    })
    entry = python_env.collect([str(tmp_path)])["section"]["packages"]["private"]
    assert "s3cr3tPassw0rd" not in json.dumps(entry)
    assert entry["direct_url"]["url"] == "https://<redacted>@git.example.com/org/private.git"
    assert entry["direct_url"]["vcs_commit_id"].startswith("0123456789")


def test_unavailable_interpreter_is_recorded(tmp_path):
    from provenance.snapshot import SnapshotOptions, take_snapshot

    manifest, _ = take_snapshot(SnapshotOptions(python=str(tmp_path / "nope")))
    assert manifest.facts["python"].startswith("unavailable: no interpreter at")


def test_distributions_found_as_importlib_metadata_finds_them(tmp_path):
    """The collector scans sys.path itself (no importlib.metadata import in the foreign
    interpreter); it must find what importlib.metadata finds: dist-info, egg-info
    directories and files, an .egg's EGG-INFO, and Debian's dist-packages."""
    import re
    from importlib import metadata

    site = tmp_path / "site"
    make_dist(site, "wheel-one", "1.0", {"one/__init__.py": b""})
    (site / "Egg_Dir-2.0.egg-info").mkdir()
    (site / "Egg_Dir-2.0.egg-info" / "PKG-INFO").write_text("Name: egg-dir\nVersion: 2.0\n\n")
    (site / "egg_file-3.0-py3.11.egg-info").write_text("Name: egg-file\nVersion: 3.0\n\n")
    egg = tmp_path / "old_egg-4.0-py3.11.egg"
    (egg / "EGG-INFO").mkdir(parents=True)
    (egg / "EGG-INFO" / "PKG-INFO").write_text("Name: old-egg\nVersion: 4.0\n\n")
    paths = [str(site), str(egg), "/usr/lib/python3/dist-packages", str(tmp_path / "nowhere")]

    def norm(name: str) -> str:
        return re.sub(r"[-_.]+", "-", name).lower()

    expected = {norm(d.metadata["Name"]): d.version for d in metadata.distributions(path=paths)}
    got = python_env.collect(paths)["section"]["packages"]
    assert {n: e["version"] for n, e in got.items()} == expected
    assert {"wheel-one", "egg-dir", "egg-file", "old-egg"} <= set(got)
