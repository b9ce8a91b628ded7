"""One wheel, installed by the real pip, uv and pdm: the same content fingerprint, and
`--verify-files` silent on an untouched install (RECORD read as the installers read it)."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path

import pytest

from containers.catalogers import python_dist
from provenance.collectors import python_env
from tests import installer_tools as tools

pytestmark = pytest.mark.timeout(900)


def site_packages(python: str) -> str:
    return str(next(Path(python).parent.parent.glob("lib/python3*/site-packages")))


def package(python: str, name: str, verify: bool = False) -> dict:
    result = python_env.collect([site_packages(python)], verify=verify)
    return result["section"]["packages"][name]


def record_text(python: str, name: str, version: str) -> str:
    info = Path(site_packages(python)) / f"{name}-{version}.dist-info"
    return (info / "RECORD").read_text()


@pytest.fixture(scope="module")
def idna_installs(tmp_path_factory) -> dict[str, str]:
    """idna 3.10 from PyPI, installed five ways: by file with pip, uv and pdm; by name with
    pip and uv."""
    root = tmp_path_factory.mktemp("idna")
    whl = tools.wheel("idna==3.10")
    out = {}
    for how in ("pip-file", "uv-file", "pdm-file", "pip-index", "uv-index"):
        out[how] = tools.new_venv(root / how)
    tools.pip_install(out["pip-file"], str(whl))
    tools.uv_install(out["uv-file"], str(whl))
    tools.pdm_install(out["pdm-file"], root / "pdm-project", [f"idna @ {whl.as_uri()}"])
    tools.pip_install(out["pip-index"], "idna==3.10")
    tools.uv_install(out["uv-index"], "idna==3.10")
    return out


def test_one_wheel_fingerprints_the_same_under_every_installer(idna_installs):
    # the installers really did write different files (else the test shows nothing)
    uv_record = record_text(idna_installs["uv-file"], "idna", "3.10")
    assert "idna-3.10.dist-info/uv_cache.json" in uv_record
    assert "direct_url.json" in record_text(idna_installs["pdm-file"], "idna", "3.10")
    installers = {how: package(py, "idna").get("installer") for how, py in idna_installs.items()}
    assert set(installers.values()) == {"pip", "uv", "pdm"}, installers
    prints = {how: package(py, "idna")["fingerprint"] for how, py in idna_installs.items()}
    assert len(set(prints.values())) == 1, prints


def test_every_file_of_the_wheel_is_in_the_fingerprint(idna_installs):
    """Each file the wheel ships (METADATA, WHEEL and the license included) counts: a
    changed byte in any of them changes the fingerprint."""
    whl = tools.wheel("idna==3.10")
    rows = python_dist.record_rows(record_text(idna_installs["uv-file"], "idna", "3.10"))
    base = python_dist.content_fingerprint(rows)
    with zipfile.ZipFile(whl) as zf:
        members = [n for n in zf.namelist() if not n.endswith("/RECORD")]
        for member in members:
            changed = zf.read(member) + b"\n"
            digest = hashlib.sha256(changed).digest()
            new_hash = "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
            edited = [[r[0], new_hash, *r[2:]] if r[0] == member else r for r in rows]
            assert python_dist.content_fingerprint(edited) != base, member
    assert len(members) >= 8


def test_a_rebuilt_wheel_with_one_changed_file_fingerprints_differently(idna_installs, tmp_path):
    whl = tools.wheel("idna==3.10")
    changed = tmp_path / whl.name
    with zipfile.ZipFile(whl) as src, zipfile.ZipFile(changed, "w") as dst:
        record = []
        for info in src.infolist():
            if info.filename.endswith("/RECORD"):
                continue
            data = src.read(info)
            if info.filename == "idna/core.py":
                data += b"\n# one more line\n"
            dst.writestr(info, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            record.append(f"{info.filename},sha256={digest.decode()},{len(data)}")
        record.append("idna-3.10.dist-info/RECORD,,")
        dst.writestr("idna-3.10.dist-info/RECORD", "\n".join(record) + "\n")
    python = tools.new_venv(tmp_path / "v")
    tools.uv_install(python, str(changed))
    original = package(idna_installs["uv-file"], "idna")["fingerprint"]
    assert package(python, "idna")["fingerprint"] != original


@pytest.fixture(scope="module")
def numpy_installs(tmp_path_factory) -> dict[str, str]:
    """numpy 2.2.6 ships `numpy/distutils/__pycache__/conv_template.cpython-311.pyc`; pip's
    byte-compile rewrites it and adds a hash-less RECORD row for it beside the wheel's."""
    root = tmp_path_factory.mktemp("numpy")
    whl = tools.wheel("numpy==2.2.6")
    out = {how: tools.new_venv(root / how) for how in ("pip", "uv", "pdm")}
    tools.pip_install(out["pip"], str(whl))
    tools.uv_install(out["uv"], str(whl))
    tools.pdm_install(out["pdm"], root / "pdm-project", [f"numpy @ {whl.as_uri()}"])
    return out


@pytest.mark.parametrize("installer", ["pip", "uv", "pdm"])
def test_verify_files_is_silent_on_an_untouched_numpy(numpy_installs, installer):
    python = numpy_installs[installer]
    entry = package(python, "numpy", verify=True)
    assert "modified_files" not in entry, entry.get("modified_files")
    assert "missing_files" not in entry, entry.get("missing_files")


def test_pip_really_wrote_two_rows_for_the_shipped_pyc(numpy_installs):
    pyc = "numpy/distutils/__pycache__/conv_template.cpython-311.pyc"
    rows = [r for r in python_dist.record_rows(record_text(numpy_installs["pip"], "numpy",
                                                           "2.2.6")) if r[0] == pyc]
    assert sorted(bool(r[1]) for r in rows) == [False, True], rows


def test_verify_files_still_sees_an_edit_after_duplicate_rows(numpy_installs, tmp_path):
    import shutil

    venv = tmp_path / "copy"
    shutil.copytree(Path(numpy_installs["uv"]).parent.parent, venv, symlinks=True)
    python = str(venv / "bin" / "python")
    target = Path(site_packages(python)) / "numpy" / "version.py"
    target.write_text(target.read_text() + "\n# edited\n")
    entry = package(python, "numpy", verify=True)
    assert entry["modified_files"] == ["numpy/version.py"]


def test_numpy_fingerprints_the_same_under_every_installer(numpy_installs):
    prints = {how: package(py, "numpy")["fingerprint"] for how, py in numpy_installs.items()}
    assert len(set(prints.values())) == 1, prints
