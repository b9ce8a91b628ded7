"""The `--python` collector's kept answer (`stamped`, prov's one cache): a warm snapshot says
exactly what a cold one says, no child starts when nothing changed, and every change the answer
depends on (an install, a removal, an in-place edit with its mtime put back, a `.pth` file, a
racy file, `--verify-files`) makes the child answer again. Also the host dpkg database's kept
parse.

Files a test made a moment ago are inside the racy window (`stamped.RACY_NS`), whose answers
are never kept; the `settled` fixture counts them as settled (a window of 0) so that the
tests need not wait, except the one about the window itself."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from provenance.collectors import foreign, os_info, python_env, stamped
from provenance.snapshot import SnapshotOptions, take_snapshot
from tests.provenance.collectors.test_python_env import make_dist

RACY_NS = stamped.RACY_NS


@pytest.fixture()
def settled(monkeypatch) -> None:
    monkeypatch.setattr(stamped, "RACY_NS", 0)


@pytest.fixture()
def venv(tmp_path, monkeypatch, settled) -> tuple[str, Path]:
    monkeypatch.setenv("PROV_CACHE_DIR", str(tmp_path / "cache"))
    base = shutil.which("python3") or sys.executable
    target = tmp_path / "venv"
    subprocess.run([base, "-m", "venv", "--without-pip", str(target)], check=True, timeout=120)
    python = str(target / "bin" / "python")
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    make_dist(Path(site), "alpha", "1.0", {"alpha/__init__.py": b"x = 1\n"})
    return python, Path(site)


def snap(python: str | None, verify: bool = False) -> tuple[dict, str]:
    manifest, _ = take_snapshot(SnapshotOptions(python=python, verify_files=verify))
    return manifest.facts, manifest.digest()


def answer(facts: dict) -> str:
    return facts["collectors"]["python"]["answer"]


def test_a_kept_answer_equals_a_fresh_one_and_starts_no_child(venv, monkeypatch, tmp_path):
    python, _ = venv
    cold, cold_digest = snap(python)
    assert answer(cold) == "collected"

    def no_child(*args, **kwargs):
        raise AssertionError("a child interpreter was started for a valid kept answer")

    monkeypatch.setattr(subprocess, "Popen", no_child)
    warm, warm_digest = snap(python)
    monkeypatch.undo()
    assert answer(warm) == "cached"
    assert warm_digest == cold_digest
    assert warm["python"] == cold["python"]
    monkeypatch.setenv("PROV_CACHE_DIR", str(tmp_path / "empty-cache"))
    assert snap(python)[1] == cold_digest  # and a cache-less snapshot agrees


def test_an_install_and_a_removal_are_seen(venv):
    python, site = venv
    snap(python)
    make_dist(site, "beta", "2.0", {"beta/__init__.py": b"y = 2\n"})
    facts, _ = snap(python)
    assert answer(facts) == "collected"
    assert facts["python"]["packages"]["beta"]["version"] == "2.0"
    snap(python)
    shutil.rmtree(site / "beta-2.0.dist-info")
    facts, _ = snap(python)
    assert "beta" not in facts["python"]["packages"]


def test_an_in_place_edit_with_its_mtime_put_back_is_seen(venv):
    python, site = venv
    snap(python)
    metadata = site / "alpha-1.0.dist-info" / "METADATA"
    st = metadata.stat()
    metadata.write_text(metadata.read_text().replace("1.0", "1.1"))  # same size, same inode
    os.utime(metadata, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (metadata.stat().st_size, metadata.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    facts, _ = snap(python)
    assert facts["python"]["packages"]["alpha"]["version"] == "1.1"


def test_a_pth_file_edited_in_place_is_seen(venv, tmp_path):
    python, site = venv
    extra = tmp_path / "extra"
    make_dist(extra, "gamma", "3.0")
    pth = site / "extra.pth"
    pth.write_text("\n")
    assert "gamma" not in snap(python)[0]["python"]["packages"]
    with open(pth, "w") as fh:  # the same file: the directory's mtime does not change
        fh.write(f"{extra}\n")
    assert snap(python)[0]["python"]["packages"]["gamma"]["version"] == "3.0"


def test_a_racy_answer_is_not_kept(venv, monkeypatch):
    """The real window: an answer read from a file changed less than RACY_NS before the
    collection began is asked again, until the file is older (the test waits it out)."""
    python, site = venv
    monkeypatch.setattr(stamped, "RACY_NS", RACY_NS)
    (site / "alpha-1.0.dist-info" / "INSTALLER").write_text("pip\n")  # changed just now
    assert answer(snap(python)[0]) == "collected"
    assert answer(snap(python)[0]) == "collected"
    time.sleep(RACY_NS / 1e9 + 0.1)  # the file leaves the window: no event marks it
    snap(python)
    assert answer(snap(python)[0]) == "cached"


def test_verify_files_always_asks_the_child(venv):
    python, site = venv
    snap(python)
    (site / "alpha" / "__init__.py").write_text("x = 2\n")
    facts, _ = snap(python, verify=True)
    assert answer(facts) == "collected"
    assert facts["python"]["packages"]["alpha"]["modified_files"] == ["alpha/__init__.py"]


def test_a_damaged_entry_is_a_miss(venv):
    python, _ = venv
    _, digest = snap(python)
    path = python_env.answer_key(python)
    assert Path(path).is_file()
    Path(path).write_text('{"version": 2, "deps": {"/x": null}, "value": {"sect')
    facts, again = snap(python)
    assert answer(facts) == "collected" and again == digest


def test_the_interpreter_as_named_is_part_of_the_key(venv):
    python, _ = venv
    started = foreign.start(python, False)
    assert started.proc is not None
    foreign.stop(started)
    assert python_env.answer_key(python) != python_env.answer_key(python + "3")


def test_the_host_dpkg_parse_is_kept_until_the_database_changes(tmp_path, monkeypatch, settled):
    monkeypatch.setenv("PROV_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "root"
    admin = root / "var/lib/dpkg"
    admin.mkdir(parents=True)
    stanza = "Package: {0}\nStatus: install ok installed\nVersion: {1}\nArchitecture: amd64\n\n"
    (admin / "status").write_text(stanza.format("zlib1g", "1:1.2.13"))
    cold = os_info.dpkg_packages(root, [])
    assert os_info.host_dpkg_packages([], root) == cold
    assert os_info.host_dpkg_packages([], root) == cold  # from the kept parse
    kept = stamped.load(stamped.entry_path("dpkg", [str(root)]))
    assert kept is not None and kept["packages"] == cold
    with open(admin / "status", "a") as fh:
        fh.write(stanza.format("bash", "5.2"))
    got = os_info.host_dpkg_packages([], root)
    assert got == os_info.dpkg_packages(root, []) and "bash" in got


def test_the_running_interpreter_keeps_its_answer_too(tmp_path, monkeypatch, settled):
    """Without --python the same kept answer serves prov's own interpreter (its sys.path)."""
    monkeypatch.setenv("PROV_CACHE_DIR", str(tmp_path / "cache"))
    site = tmp_path / "site"
    make_dist(site, "alpha", "1.0", {"alpha/__init__.py": b"x = 1\n"})
    stdlib = [p for p in sys.path if p.startswith(sys.base_prefix) and "-packages" not in p]
    monkeypatch.setattr(sys, "path", [str(site), *stdlib])  # stdlib: sysconfig imports on use
    cold, cold_digest = snap(None)
    warm, warm_digest = snap(None)
    assert (answer(cold), answer(warm)) == ("collected", "cached")
    assert warm_digest == cold_digest and warm["python"] == cold["python"]
    make_dist(site, "beta", "2.0")
    facts, _ = snap(None)
    assert answer(facts) == "collected"
    assert sorted(facts["python"]["packages"]) == ["alpha", "beta"]
