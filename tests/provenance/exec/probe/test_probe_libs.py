"""Mapped libraries at exit: ELF build-id (against binutils), owners, shadowing."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from provenance.exec.probe.elf import build_id
from provenance.exec.probe.host import collect
from tests.provenance.exec.probe.probe_support import run_probed

SYSTEM_GOMP = Path("/usr/lib/x86_64-linux-gnu/libgomp.so.1")


def readelf_build_id(path: str) -> str | None:
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    return m.group(1) if m else None


@pytest.mark.skipif(shutil.which("readelf") is None, reason="binutils' readelf not installed")
def test_build_id_equals_readelf(tmp_path):
    import torch  # noqa: F401 - only to find its libraries

    libs = sorted(Path(torch.__file__).parent.glob("lib/*.so*"))[:6] + [Path("/bin/ls")]
    for lib in libs:
        assert build_id(str(lib)) == readelf_build_id(str(lib)), lib
    (tmp_path / "not-elf.so").write_bytes(b"hello")
    assert build_id(str(tmp_path / "not-elf.so")) is None


def libs_of(tmp_path: Path, **env: str) -> dict:
    p = run_probed(tmp_path, "-c", "import torch; print(torch.ones(4).sum().item())", **env)
    assert p.returncode == 0, p.stderr
    return collect(tmp_path)


def test_libraries_at_exit_have_owner_and_build_id(tmp_path):
    facts = libs_of(tmp_path)
    libs = facts["runtime"]["libs"]
    gomp = libs["libgomp.so.1"]
    assert gomp["owner"].startswith("wheel:torch==") and "shadows" not in gomp
    assert gomp["path"].endswith("torch/lib/libgomp.so.1")
    assert gomp["build_id"] == readelf_build_id(gomp["path"])
    assert libs["libc.so.6"]["owner"].startswith("dpkg:libc6")
    assert "shadowing" not in facts["probe"]["libraries"]


@pytest.mark.skipif(not SYSTEM_GOMP.exists(), reason="no Debian libgomp1 here")
def test_a_copy_found_first_on_ld_library_path_is_flagged_as_shadowing(tmp_path):
    hand = tmp_path / "hand"
    hand.mkdir()
    shutil.copy(SYSTEM_GOMP, hand / "libgomp.so.1")
    run = tmp_path / "run"
    run.mkdir()
    facts = libs_of(run, LD_LIBRARY_PATH=str(hand))
    gomp = facts["runtime"]["libs"]["libgomp.so.1"]
    assert gomp["owner"] == "none" and gomp["path"] == str(hand / "libgomp.so.1")
    assert gomp["shadows"].startswith("wheel:torch==")
    assert gomp["shadows"].endswith(":torch/lib/libgomp.so.1")
    [said] = [s for s in facts["probe"]["libraries"]["shadowing"] if "libgomp" in s]
    assert said.startswith(f"{hand / 'libgomp.so.1'} (none) is mapped where ")
    assert "torch/lib/libgomp.so.1 (wheel:torch==" in said
    assert str(hand / "libgomp.so.1") in facts["probe"]["libraries"]["unowned"]
    # the system's own copy, owned by dpkg, is named with its package
    sysrun = tmp_path / "sys"
    sysrun.mkdir()
    gomp = libs_of(sysrun, LD_LIBRARY_PATH=str(SYSTEM_GOMP.parent))["runtime"]["libs"][
        "libgomp.so.1"]
    assert gomp["owner"].startswith("dpkg:libgomp1") and gomp["shadows"].startswith("wheel:torch")
