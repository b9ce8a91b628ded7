"""Each file finding says why: one image built here holds one file of every kind.

Layer 0 installs a Debian package whose extension module was stripped after its wheel was
built (RECORD's sha256 is of the unstripped bytes, dpkg's md5sums of the stripped ones:
`dpkg_intact`), two wheels that both install `shared/util.py` (the later one's copy is on
disk: `shared` for the earlier), and a wheel whose RECORD lists a file never written
(`never_installed`). Layer 1 rewrites one file (`modified` after the install, in layer 1)
and deletes another by a whiteout (`missing`, in layer 1). Digests come from hashlib here.
"""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures import oci_pack

PROV = str(Path(sys.executable).with_name("prov"))
SITE = "opt/venv/lib/python3.11/site-packages"
DEB_SITE = "usr/lib/python3/dist-packages"
RUST_SO = f"{DEB_SITE}/crypt/_rust.abi3.so"
UNSTRIPPED, STRIPPED = b"\x7fELF rust with symbols\n", b"\x7fELF rust\n"
SHARED = f"{SITE}/shared/util.py"
ALPHA_UTIL, BETA_UTIL = b"VERSION = 'alpha'\n", b"VERSION = 'beta'\n"
CORE, GONE, DELETED = (f"{SITE}/alpha/{n}" for n in ("core.py", "gone.py", "old.py"))
BEFORE, AFTER = b"x = 1\n", b"x = 2\n"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _write(root: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)


def _wheel(site: str, name: str, rows: dict[str, bytes | None]) -> dict[str, bytes]:
    """A dist-info whose RECORD lists `rows` (relative path -> the bytes hashed)."""
    dist = f"{name}-1.0.dist-info"
    lines = [f"{p},sha256={_b64(b)},{len(b)}" for p, b in rows.items() if b is not None]
    lines += [f"{dist}/METADATA,,", f"{dist}/RECORD,,"]
    return {
        f"{site}/{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n\n".encode(),
        f"{site}/{dist}/RECORD": ("\n".join(lines) + "\n").encode(),
    }


def _base() -> dict[str, bytes]:
    files = {
        "etc/os-release": b"ID=debian\nVERSION_ID=12\n",
        RUST_SO: STRIPPED,
        SHARED: BETA_UTIL,  # beta installed last: its copy is the one on disk
        CORE: BEFORE,
        DELETED: BEFORE,
        "var/lib/dpkg/status": (
            b"Package: python3-crypt\nStatus: install ok installed\nArchitecture: amd64\n"
            b"Version: 1.0-1\n"
        ),
        "var/lib/dpkg/info/python3-crypt.md5sums": (
            f"{hashlib.md5(STRIPPED).hexdigest()}  {RUST_SO}\n".encode()
        ),
    }
    files.update(_wheel(DEB_SITE, "crypt", {"crypt/_rust.abi3.so": UNSTRIPPED}))
    files.update(_wheel(SITE, "alpha", {
        "shared/util.py": ALPHA_UTIL, "alpha/core.py": BEFORE, "alpha/old.py": BEFORE,
        "alpha/gone.py": b"never written\n",
    }))
    files.update(_wheel(SITE, "beta", {"shared/util.py": BETA_UTIL}))
    return files


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("verdicts")
    _write(tmp / "base", _base())
    _write(tmp / "later", {CORE: AFTER})
    layers = [
        oci_pack.layer_tar(oci_pack.LayerSpec(root=tmp / "base")),
        oci_pack.layer_tar(oci_pack.LayerSpec(root=tmp / "later", whiteouts=[DELETED])),
    ]
    config = oci_pack.image_config(layers, ["install", "patch"], [])
    oci_pack.write_oci(tmp / "oci", layers, config, "t")
    return tmp / "oci"


def _sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def test_each_finding_names_its_kind(image: Path) -> None:
    from containers import scan_image

    files = scan_image(f"oci:{image}", verify_files=True).file_checks()
    assert files is not None
    alpha, crypt = files["python:alpha"], files["python:crypt"]
    assert alpha["modified"] == [{"path": "/" + CORE, "layer": 1, "installed": 0,
                                  "expected": _sha(BEFORE), "actual": _sha(AFTER)}]
    assert alpha["shared"] == [{"path": "/" + SHARED, "layer": 0, "other": "python:beta",
                                "expected": _sha(ALPHA_UTIL), "actual": _sha(BETA_UTIL)}]
    assert alpha["missing"] == [{"path": "/" + DELETED, "layer": 1, "expected": _sha(BEFORE)}]
    assert [i["path"] for i in alpha["never_installed"]] == ["/" + GONE]
    assert "layer" not in alpha["never_installed"][0]
    assert crypt["dpkg_intact"] == [{"path": "/" + RUST_SO, "layer": 0,
                                     "other": "dpkg:python3-crypt",
                                     "expected": _sha(UNSTRIPPED), "actual": _sha(STRIPPED)}]
    assert "modified" not in crypt
    assert files["python:beta"] == {"checked": 1}
    assert files["dpkg:python3-crypt"] == {"checked": 1}


def test_pin_and_verify_print_the_kind(image: Path, tmp_path: Path) -> None:
    lock = tmp_path / "img.lock.toml"
    done = subprocess.run([PROV, "pin", f"oci:{image}", "--out", str(lock)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = " ".join(done.stdout.split())  # rich may wrap long lines
    assert ("1 modified, 1 shared, 1 dpkg intact, 1 missing, 1 never installed" in out), out
    assert "modified after install (written in layer 1, installed in 0)" in out
    assert "shared: claimed by two packages, the file is python:beta's" in out
    assert "dpkg_intact: differs from RECORD, matches dpkg's md5sums of dpkg:python3-crypt" in out
    assert "never_installed: listed, never written by any layer" in out
    text = lock.read_text()
    assert "format = 3" in text
    for kind in ("modified", "shared", "dpkg_intact", "missing", "never_installed"):
        assert f"{kind} = [" in text
    # the image matches its own lock; findings are part of what the lock pins
    again = subprocess.run([PROV, "verify", "--lock", str(lock), f"oci:{image}", "--json"],
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stdout + again.stderr
    assert json.loads(again.stdout)["match"] is True


def test_lock_kinds_mirror_the_verifier() -> None:
    from containers.verify import KINDS
    from lockfiles.image_lock import _ISSUES

    assert tuple(KINDS) == _ISSUES


def test_a_format_2_lock_compares_under_the_old_names() -> None:
    """Before the kinds were told apart, a shared file was `modified` and a never-installed
    one `missing`: an image unchanged since such a lock still matches it."""
    from lockfiles.image_lock import _FOLD_V2, compare_files

    issue = {"path": "/a.py", "layer": 0, "expected": "sha256:00", "actual": "sha256:11"}
    gone = {"path": "/b.py", "expected": "sha256:22"}
    locked = {"python:a": {"checked": 1, "modified": [issue], "missing": [gone]}}
    now = {"python:a": {"checked": 1, "shared": [issue | {"other": "python:b"}],
                        "never_installed": [gone]}}
    assert compare_files(locked, now, _FOLD_V2) == []
    assert {d.change for d in compare_files(locked, now)} == {"shared", "never_installed"}


def test_the_docs_show_what_pin_prints(image: Path, tmp_path: Path) -> None:
    """docs/concepts/locks.md shows `prov pin` on this very image: its lines (all but the
    digests, which depend on the files' mtimes) are what prov prints."""
    import os

    page = Path(__file__).resolve().parents[2] / "docs" / "concepts" / "locks.md"
    block = page.read_text().split("$ prov pin oci:oci\n", 1)[1].split("```", 1)[0]
    shown = [" ".join(line.split()) for line in block.splitlines() if "sha256:" not in line]
    env = os.environ | {"COLUMNS": "400"}
    done = subprocess.run([PROV, "pin", f"oci:{image}", "--out", str(tmp_path / "img.lock.toml")],
                          capture_output=True, text=True, timeout=120, env=env)
    printed = [" ".join(line.split()) for line in done.stdout.splitlines()]
    printed = [p for p in printed if "sha256:" not in p]
    assert shown[:-1] == printed[:-1]  # the last: the lock's path
