"""What file verification covered, stated: every regular file of the image is checked,
skipped by a named rule, or unlisted; `prov pin --all-files` records the unlisted ones, so a
changed /etc/passwd (which no Debian package lists) is reported with its layer.

Layer 0 holds 12 regular files, bucketed here by hand: checked (a dpkg md5sums line, a
dpkg conffile, two hashed RECORD rows), skipped by rule (a sha512 row, RECORD and a pip-written .pyc listed
without hash, an unlisted __pycache__ file), unlisted (os-release, passwd, dpkg's database).
Layer 1 rewrites /etc/passwd and the conffile.
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
CONF, EDITED = b"verbose = no\n", b"verbose = yes\n"  # a dpkg conffile, edited in layer 1
SITE = "opt/venv/lib/python3.11/site-packages"
DIST = "demo-1.0.dist-info"


def _hash(algo: str, data: bytes) -> str:
    raw = hashlib.new(algo, data).digest()
    return f"{algo}={base64.urlsafe_b64encode(raw).rstrip(b'=').decode()}"


def _files() -> dict[str, bytes]:
    init, big, meta = b"x = 1\n", b"y = 2\n", b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n\n"
    rows = [
        f"demo/__init__.py,{_hash('sha256', init)},6",
        f"demo/big.py,{_hash('sha512', big)},6",
        "demo/__pycache__/__init__.cpython-311.pyc,,",
        f"{DIST}/METADATA,{_hash('sha256', meta)},{len(meta)}",
        f"{DIST}/RECORD,,",
    ]
    return {
        "etc/os-release": b"ID=debian\nVERSION_ID=12\n",
        "etc/passwd": b"root:x:0:0:root:/root:/bin/bash\n",
        "var/lib/dpkg/status": (
            b"Package: tool\nStatus: install ok installed\nArchitecture: amd64\nVersion: 1\n"
            b"Conffiles:\n /etc/tool.conf " + hashlib.md5(CONF).hexdigest().encode() + b"\n"
        ),
        "etc/tool.conf": CONF,
        "var/lib/dpkg/info/tool.md5sums": (
            f"{hashlib.md5(b'tool').hexdigest()}  usr/bin/tool\n".encode()
        ),
        "usr/bin/tool": b"tool",
        f"{SITE}/demo/__init__.py": init,
        f"{SITE}/demo/big.py": big,
        f"{SITE}/demo/__pycache__/__init__.cpython-311.pyc": b"pyc 1",
        f"{SITE}/demo/__pycache__/big.cpython-311.pyc": b"pyc 2",
        f"{SITE}/{DIST}/METADATA": meta,
        f"{SITE}/{DIST}/RECORD": ("\n".join(rows) + "\n").encode(),
    }


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("coverage")
    for name, files in (("base", _files()), ("later", {"etc/passwd": b"evil::0:0::/:/bin/sh\n",
                                                  "etc/tool.conf": EDITED})):
        for rel, data in files.items():
            (tmp / name / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp / name / rel).write_bytes(data)
    layers = [oci_pack.layer_tar(oci_pack.LayerSpec(root=tmp / n)) for n in ("base", "later")]
    out = {}
    for name, n in (("base", 1), ("patched", 2)):
        config = oci_pack.image_config(layers[:n], [f"layer {i}" for i in range(n)], [])
        oci_pack.write_oci(tmp / name, layers[:n], config, "t")
        out[name] = tmp / name
    return out


def _prov(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([PROV, *args], capture_output=True, text=True, timeout=120)


WANT = {
    "files": 12, "checked": 4, "skipped": 4, "unlisted": 4,
    "skipped_by_rule": {"algorithm": 1, "pycache": 1, "unhashed": 2},
}


def test_pin_states_its_coverage(images: dict[str, Path], tmp_path: Path) -> None:
    lock = tmp_path / "base.lock.toml"
    done = _prov("pin", f"oci:{images['base']}", "--out", str(lock), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["coverage"] == WANT | {"all_files": False}
    import tomllib

    assert tomllib.loads(lock.read_text())["coverage"] == WANT | {"all_files": False}
    table = _prov("pin", f"oci:{images['base']}", "--out", str(lock))
    assert ("12 regular files: 4 checked, 4 skipped by rule (algorithm 1, pycache 1, "
            "unhashed 2), 4 unlisted") in " ".join(table.stdout.split())
    # the edited conffile is checked (dpkg's status holds its md5, as dpkg --verify reads
    # it); without --all-files the unlisted /etc/passwd is not pinned: its change goes
    # unseen, as the coverage says
    quiet = _prov("verify", "--lock", str(lock), f"oci:{images['patched']}", "--json")
    diffs = [d for d in json.loads(quiet.stdout)["differences"] if d.get("path")]
    assert [(d["key"], d["path"], d["change"], d["layer"]) for d in diffs] == [
        ("files.dpkg:tool", "/etc/tool.conf", "modified", 1)
    ]


def test_all_files_reports_a_changed_unlisted_file(
    images: dict[str, Path], tmp_path: Path
) -> None:
    lock = tmp_path / "all.lock.toml"
    done = _prov("pin", f"oci:{images['base']}", "--out", str(lock), "--json", "--all-files")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["coverage"] == WANT | {"all_files": True}
    import tomllib

    unlisted = tomllib.loads(lock.read_text())["files"]["unlisted:/"]["unlisted"]
    assert [(i["path"], i["layer"]) for i in unlisted] == [
        ("/etc/os-release", 0), ("/etc/passwd", 0), ("/var/lib/dpkg/info/tool.md5sums", 0),
        ("/var/lib/dpkg/status", 0),
    ]
    same = _prov("verify", "--lock", str(lock), f"oci:{images['base']}")
    assert same.returncode == 0, same.stdout + same.stderr
    changed = _prov("verify", "--lock", str(lock), f"oci:{images['patched']}", "--json")
    assert changed.returncode == 1
    diffs = [d for d in json.loads(changed.stdout)["differences"] if d.get("path")]
    new = "sha256:" + hashlib.sha256(b"evil::0:0::/:/bin/sh\n").hexdigest()
    assert [(d["key"], d["path"], d["change"], d["layer"], d["now"]) for d in diffs] == [
        ("files.dpkg:tool", "/etc/tool.conf", "modified", 1, "md5:" + hashlib.md5(EDITED).hexdigest()),
        ("files.unlisted:/", "/etc/passwd", "unlisted", 1, new),
    ]
    table = _prov("verify", "--lock", str(lock), f"oci:{images['patched']}")
    assert "/etc/passwd: unlisted: no package lists it (written in layer 1)" in table.stdout
