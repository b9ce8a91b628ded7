"""A real Debian `python3-*` package, whose RECORD hashes are hex (dh-python writes them so),
reads clean: no file reported modified, no garbled expected digest in the lock.

The .deb comes from Debian's archive through `apt-get download` (cached outside the repo,
~/.cache/prov-tests/debs); the image is built here from its data.tar and its control
files laid out as dpkg lays them out (status stanza, info/<pkg>.md5sums and .list).
"""

from __future__ import annotations

import io
import json
import lzma
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tests.fixtures import oci_pack

PROV = str(Path(sys.executable).with_name("prov"))
CACHE = Path.home() / ".cache" / "prov-tests" / "debs"
PACKAGE = "python3-distro"


def _deb() -> Path:
    """The cached .deb, downloaded once with apt-get (skip where no archive is reachable)."""
    found = sorted(CACHE.glob(f"{PACKAGE}_*.deb"))
    if found:
        return found[-1]
    if shutil.which("apt-get") is None:
        pytest.skip("no apt-get to download a Debian package")
    CACHE.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["apt-get", "download", PACKAGE], cwd=CACHE, capture_output=True,
                          text=True, timeout=120)
    found = sorted(CACHE.glob(f"{PACKAGE}_*.deb"))
    if not found:
        pytest.skip(f"apt-get download {PACKAGE} failed: {done.stderr.strip()[-200:]}")
    return found[-1]


def _ar_members(data: bytes) -> dict[str, bytes]:
    """The members of an ar archive (a .deb): 60-byte headers, 2-byte aligned bodies."""
    assert data.startswith(b"!<arch>\n")
    out, pos = {}, 8
    while pos + 60 <= len(data):
        head = data[pos : pos + 60]
        name, size = head[:16].decode().strip().rstrip("/"), int(head[48:58])
        out[name] = data[pos + 60 : pos + 60 + size]
        pos += 60 + size + (size & 1)
    return out


def _raw(blob: bytes, name: str) -> bytes:
    """A .deb member's tar, decompressed (xz in Debian 12, zstd in Ubuntu's)."""
    if name.endswith(".xz"):
        return lzma.decompress(blob)
    if name.endswith(".zst"):
        import zstandard

        return zstandard.ZstdDecompressor().decompressobj().decompress(blob)
    return blob


def _untar(blob: bytes, name: str) -> tarfile.TarFile:
    return tarfile.open(fileobj=io.BytesIO(_raw(blob, name)))


def _member(members: dict[str, bytes], prefix: str) -> tuple[str, bytes]:
    return next((n, b) for n, b in members.items() if n.startswith(prefix))


@pytest.fixture(scope="module")
def debian_image(tmp_path_factory: pytest.TempPathFactory) -> Path:
    members = _ar_members(_deb().read_bytes())
    data_name, data = _member(members, "data.tar")
    ctl_name, ctl = _member(members, "control.tar")
    with _untar(ctl, ctl_name) as tf:
        control = {m.name.lstrip("./"): tf.extractfile(m).read() for m in tf if m.isfile()}
    with _untar(data, data_name) as tf:
        paths = [m.name.lstrip(".").lstrip("/") for m in tf if m.name not in (".", "./")]
    fields = control["control"].decode()
    status = fields.rstrip("\n").replace("\nVersion:", "\nStatus: install ok installed\nVersion:", 1)
    root = tmp_path_factory.mktemp("deb") / "root"
    info = root / "var/lib/dpkg/info"
    info.mkdir(parents=True)
    (root / "etc").mkdir()
    (root / "etc/os-release").write_text("ID=debian\nVERSION_ID=12\n")
    (root / "var/lib/dpkg/status").write_text(status + "\n\n")
    (info / f"{PACKAGE}.md5sums").write_bytes(control["md5sums"])
    (info / f"{PACKAGE}.list").write_text("".join(f"/{p}\n" for p in paths))
    # layer 0: the package's data.tar as dpkg unpacks it; layer 1: dpkg's database
    layers = [_raw(data, data_name)]
    layers.append(oci_pack.layer_tar(oci_pack.LayerSpec(root=root)))
    config = oci_pack.image_config(layers, ["dpkg --unpack", "dpkg --configure"], [])
    out = root.parent / "oci"
    oci_pack.write_oci(out, layers, config, "t")
    return out


def test_hex_record_reads_clean(debian_image: Path, tmp_path: Path) -> None:
    from containers import scan_image

    scan = scan_image(f"oci:{debian_image}", verify_files=True)
    assert any(d.name == "distro" for d in scan.python_dists)
    files = scan.file_checks()
    assert files is not None
    py, deb = files["python:distro"], files[f"dpkg:{PACKAGE}"]
    # every hashed RECORD row of an installed file checked and intact (hex read as hex)
    assert py["checked"] >= 8 and "modified" not in py and "dpkg_intact" not in py
    assert deb["checked"] >= 9 and "modified" not in deb
    # the one row for a file dh-python did not install (the script went to /usr/bin) is
    # named for what it is, with the digest exactly as RECORD wrote it
    never = py.get("never_installed", [])
    assert [i["path"].rsplit("/", 2)[-2:] for i in never] == [["scripts-3.10", "distro"]]
    assert never[0]["expected"].startswith("sha256:") and len(never[0]["expected"]) == 71
    lock = tmp_path / "deb.lock.toml"
    done = subprocess.run([PROV, "pin", f"oci:{debian_image}", "--out", str(lock), "--json"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)["files"]
    assert summary["modified"] == 0 and summary["never_installed"] == 1
    text = lock.read_text()
    # no expected digest in the lock is anything but a whole sha256 or md5 in hex
    for digest in re.findall(r'expected = "([^"]*)"', text):
        assert re.fullmatch(r"sha256:[0-9a-f]{64}|md5:[0-9a-f]{32}", digest), digest
