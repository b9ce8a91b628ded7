"""File verification in the streaming pass: `prov verify --lock` names each changed file.

The image is built here: layer 0 holds a pip-style distribution (RECORD), a dpkg package
(md5sums) and a conda package (conda-meta paths_data); layer 1 rewrites the RECORD-listed
file and the md5sums-listed file; layer 2 rewrites the conda file, deletes a dpkg file by a
whiteout and drops an unclaimed file into the Python package. The expected digests are
computed here from the bytes written, with hashlib.
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
CORE = f"{SITE}/demo/core.py"
EXTRA = f"{SITE}/demo/extra.py"
TOOL = "usr/bin/tool"
README = "usr/share/doc/tool/README"
LIBZ = "opt/conda/lib/libz.so.1"
ORIGINAL = {
    CORE: b"def f():\n    return 1\n",
    f"{SITE}/demo/__init__.py": b"from demo.core import f\n",
    TOOL: b"#!/bin/sh\necho tool\n",
    README: b"the tool\n",
    LIBZ: b"\x7fELF libz 1.0\n",
}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _write(root: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)


def _base_tree(root: Path) -> None:
    _write(root, ORIGINAL)
    dist = f"{SITE}/demo-1.0.dist-info"
    meta = {f"{dist}/METADATA": b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n\n"}
    meta[f"{dist}/INSTALLER"] = b"pip\n"
    rows = [f"demo/{n},sha256={_b64(ORIGINAL[f'{SITE}/demo/{n}'])},1" for n in ("__init__.py", "core.py")]
    rows += [f"demo-1.0.dist-info/{n},sha256={_b64(meta[f'{dist}/{n}'])},1" for n in ("METADATA", "INSTALLER")]
    rows.append("demo-1.0.dist-info/RECORD,,")
    meta[f"{dist}/RECORD"] = ("\n".join(rows) + "\n").encode()
    status = "Package: tool\nStatus: install ok installed\nArchitecture: amd64\nVersion: 2.0-1\n"
    md5sums = "".join(f"{hashlib.md5(ORIGINAL[p]).hexdigest()}  {p}\n" for p in (TOOL, README))
    conda = {
        "name": "libz",
        "version": "1.0",
        "paths_data": {
            "paths": [{"_path": "lib/libz.so.1", "sha256": hashlib.sha256(ORIGINAL[LIBZ]).hexdigest()}]
        },
    }
    meta.update(
        {
            "etc/os-release": b"ID=debian\nVERSION_ID=12\n",
            "var/lib/dpkg/status": status.encode(),
            "var/lib/dpkg/info/tool.md5sums": md5sums.encode(),
            "opt/conda/conda-meta/libz-1.0-0.json": json.dumps(conda).encode(),
        }
    )
    _write(root, meta)


CHANGED_1 = {CORE: b"def f():\n    return 2\n", TOOL: b"#!/bin/sh\necho evil\n"}
CHANGED_2 = {LIBZ: b"\x7fELF libz patched\n", EXTRA: b"import os\n"}


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("verify-img")
    base, one, two = tmp / "base", tmp / "one", tmp / "two"
    _base_tree(base)
    _write(one, CHANGED_1)
    _write(two, CHANGED_2)
    layers = [
        oci_pack.layer_tar(oci_pack.LayerSpec(root=base)),
        oci_pack.layer_tar(oci_pack.LayerSpec(root=one)),
        oci_pack.layer_tar(oci_pack.LayerSpec(root=two, whiteouts=[README])),
    ]
    out = {}
    for name, n in (("base", 1), ("patched", 3)):
        config = oci_pack.image_config(layers[:n], [f"layer {i}" for i in range(n)], [])
        oci_pack.write_oci(tmp / name, layers[:n], config, "t")
        out[name] = tmp / name
    return out


def counts(**some: int) -> dict[str, int]:
    """`prov pin --json`'s files summary: every count, zero unless given."""
    kinds = ("modified", "shared", "dpkg_intact", "missing", "never_installed", "unclaimed")
    return {"checked": 0, "skipped": 0} | dict.fromkeys(kinds, 0) | some


def prov(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([PROV, *args], capture_output=True, text=True, timeout=120)


def _pin(layout: Path, lock: Path) -> dict:
    done = prov("pin", f"oci:{layout}", "--out", str(lock), "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_unchanged_image_verifies_clean(images: dict[str, Path], tmp_path: Path) -> None:
    lock = tmp_path / "base.lock.toml"
    summary = _pin(images["base"], lock)
    assert summary["files"] == counts(checked=7)
    assert "[files]" in lock.read_text()
    ok = prov("verify", "--lock", str(lock), f"oci:{images['base']}")
    assert ok.returncode == 0, ok.stdout + ok.stderr


def test_verify_names_each_changed_file_with_its_layer(
    images: dict[str, Path], tmp_path: Path
) -> None:
    lock = tmp_path / "base.lock.toml"
    _pin(images["base"], lock)
    done = prov("verify", "--lock", str(lock), f"oci:{images['patched']}", "--json")
    assert done.returncode == 1, done.stderr
    files = {
        d["path"]: d for d in json.loads(done.stdout)["differences"] if d["key"].startswith("files.")
    }

    def sha(data: bytes) -> str:
        return "sha256:" + hashlib.sha256(data).hexdigest()

    def md5(data: bytes) -> str:
        return "md5:" + hashlib.md5(data).hexdigest()

    want = {
        "/" + CORE: ("files.python:demo", "modified", 1, sha(ORIGINAL[CORE]), sha(CHANGED_1[CORE])),
        "/" + TOOL: ("files.dpkg:tool", "modified", 1, md5(ORIGINAL[TOOL]), md5(CHANGED_1[TOOL])),
        "/" + LIBZ: ("files.python:libz", "modified", 2, sha(ORIGINAL[LIBZ]), sha(CHANGED_2[LIBZ])),
        "/" + README: ("files.dpkg:tool", "missing", 2, md5(ORIGINAL[README]), None),
        "/" + EXTRA: ("files.python:demo", "unclaimed", 2, None, sha(CHANGED_2[EXTRA])),
    }
    got = {p: (d["key"], d["change"], d["layer"], d["locked"], d["now"]) for p, d in files.items()}
    assert got == want
    table = prov("verify", "--lock", str(lock), f"oci:{images['patched']}")
    assert table.returncode == 1
    for path in want:
        assert path.rsplit("/", 1)[-1] in table.stdout


def test_pin_of_a_patched_image_records_its_findings(
    images: dict[str, Path], tmp_path: Path
) -> None:
    lock = tmp_path / "patched.lock.toml"
    summary = _pin(images["patched"], lock)
    assert summary["files"] == counts(checked=6, modified=3, missing=1, unclaimed=1)
    again = prov("verify", "--lock", str(lock), f"oci:{images['patched']}")
    assert again.returncode == 0, again.stdout + again.stderr
    # the same lock against the clean image: the three files are restored, README is back,
    # extra.py gone (an unclaimed file that vanished is "restored" too)
    back = prov("verify", "--lock", str(lock), f"oci:{images['base']}", "--json")
    assert back.returncode == 1
    diffs = json.loads(back.stdout)["differences"]
    changes = {d["path"]: d["change"] for d in diffs if d.get("path")}
    assert changes == {"/" + p: "restored" for p in (CORE, TOOL, LIBZ, README, EXTRA)}


def test_old_format_lock_still_verifies(images: dict[str, Path], tmp_path: Path) -> None:
    from containers import scan_image
    from lockfiles.image_lock import lock_from_facts

    scan = scan_image(f"oci:{images['base']}", verify_files=False)
    lock = tmp_path / "v1.lock.toml"
    lock.write_text(lock_from_facts(scan.facts()))
    assert "format = 1" in lock.read_text()
    ok = prov("verify", "--lock", str(lock), f"oci:{images['base']}")
    assert ok.returncode == 0, ok.stdout + ok.stderr
