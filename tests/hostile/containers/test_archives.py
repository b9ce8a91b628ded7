"""Archives that say more than they seem to (issue #30 item 5): data after a tar's end, layer
media types prov cannot unpack, compression that is not the one the label names.

The oracle for "hidden" is real GNU tar: `tar -t` stops at the end-of-archive block like
prov's reader, `tar -i` (--ignore-zeros) reads on and lists what the image also carries.
"""

from __future__ import annotations

import gzip
import io
import json
import shutil
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

import pytest

from tests.fixtures.oci_pack import GZIP_LAYER, image_config, write_oci_blobs

PROV = [sys.executable, "-c", "import sys; from provenance.cli import main; sys.exit(main())"]
OS_RELEASE = b'ID=debian\nVERSION_ID="12"\n'
META = b"Metadata-Version: 2.1\nName: six\nVersion: 1.17.0\n"
SITE = "usr/lib/python3/dist-packages"


def _tar(files: dict[str, bytes]) -> bytes:
    """A tar as GNU tar writes it: members, two zero blocks, padded to 10 KiB records."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


BASE = _tar({"etc/os-release": OS_RELEASE, f"{SITE}/six-1.17.0.dist-info/METADATA": META})
HIDDEN = _tar({"usr/bin/sshd-backdoor": b"#!/bin/sh\n",
               f"{SITE}/evil-6.6.6.dist-info/METADATA":
               b"Metadata-Version: 2.1\nName: evil\nVersion: 6.6.6\n"})


def _image(root: Path, blob: bytes, media: str, stream: bytes) -> str:
    """An OCI layout of one layer `blob` whose uncompressed bytes are `stream`."""
    write_oci_blobs(root / "oci", [(blob, media)], image_config([stream], ["x"], []), "t")
    return f"oci:{root / 'oci'}"


def _prov(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([*PROV, *argv], capture_output=True, text=True, timeout=120)


def _gnu_tar_lists(blob: Path, *flags: str) -> list[str]:
    out = subprocess.run(["tar", *flags, "-tzf", str(blob)], capture_output=True, text=True,
                         check=True)
    return out.stdout.split()


def _refused(proc: subprocess.CompletedProcess, *words: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert all(w in proc.stderr for w in words), proc.stderr


needs_gnu_tar = pytest.mark.skipif(shutil.which("tar") is None, reason="GNU tar not installed")


@needs_gnu_tar
def test_a_second_gzip_member_after_the_tar_end_is_refused(tmp_path: Path) -> None:
    blob = gzip.compress(BASE, mtime=0) + gzip.compress(HIDDEN, mtime=0)
    (tmp_path / "layer.tgz").write_bytes(blob)
    # GNU tar stops where prov's reader stops; with -i it reads on and finds the hidden files
    seen = _gnu_tar_lists(tmp_path / "layer.tgz")
    hidden = _gnu_tar_lists(tmp_path / "layer.tgz", "-i")
    assert "usr/bin/sshd-backdoor" not in seen and "usr/bin/sshd-backdoor" in hidden
    src = _image(tmp_path, blob, GZIP_LAYER, BASE + HIDDEN)  # the DiffID covers both members
    for argv in (["pin", src, "-o", str(tmp_path / "lock.toml")],
                 ["sbom", "--image", src, "-o", str(tmp_path / "sbom.json")]):
        _refused(_prov(*argv), "end-of-archive", "tar -i")
    assert not (tmp_path / "lock.toml").exists() and not (tmp_path / "sbom.json").exists()


@needs_gnu_tar
def test_members_after_the_zero_blocks_of_a_plain_layer_are_refused(tmp_path: Path) -> None:
    stream = BASE + HIDDEN  # one uncompressed blob: the second tar starts after the first's end
    (tmp_path / "layer.tgz").write_bytes(gzip.compress(stream, mtime=0))
    assert "usr/bin/sshd-backdoor" in _gnu_tar_lists(tmp_path / "layer.tgz", "-i")
    src = _image(tmp_path, stream, "application/vnd.oci.image.layer.v1.tar", stream)
    _refused(_prov("pin", src, "-o", str(tmp_path / "lock.toml")), "end-of-archive")


def test_nul_padding_after_the_end_is_accepted(tmp_path: Path) -> None:
    """Padding is what every tar writer leaves: extra zero records, and zeros after the last
    gzip member (tolerated by gzip itself), are not data."""
    stream = BASE + bytes(20480)
    blob = gzip.compress(stream, mtime=0) + bytes(512)
    src = _image(tmp_path, blob, GZIP_LAYER, stream)
    proc = _prov("pin", src, "-o", str(tmp_path / "lock.toml"))
    assert proc.returncode == 0, proc.stderr
    lock = tomllib.loads((tmp_path / "lock.toml").read_text())
    assert "python:six" in json.dumps(lock)


@pytest.mark.parametrize("media", [
    "application/vnd.oci.image.layer.v1.tar+encrypted",  # ocicrypt: nothing to unpack here
    "application/vnd.wasm.content.layer.v1+wasm",
    "application/octet-stream",
    "",
])
def test_an_unknown_layer_media_type_is_refused_before_it_is_read(tmp_path: Path,
                                                                   media: str) -> None:
    src = _image(tmp_path, gzip.compress(BASE, mtime=0), media, BASE)
    _refused(_prov("pin", src, "-o", str(tmp_path / "lock.toml")), "media type", "refused")


@pytest.mark.skipif(shutil.which("zstd") is None, reason="zstd not installed")
def test_a_gzip_labelled_zstd_layer_is_read_by_its_bytes_and_warned_about(
        tmp_path: Path) -> None:
    """containerd and Docker sniff the magic bytes, so the runtime sees the zstd content: prov
    reads the same, and the lock says the label was wrong."""
    (tmp_path / "layer.tar").write_bytes(BASE)
    subprocess.run(["zstd", "-q", "-19", str(tmp_path / "layer.tar")], check=True)
    blob = (tmp_path / "layer.tar.zst").read_bytes()
    src = _image(tmp_path, blob, GZIP_LAYER, BASE)
    proc = _prov("pin", src, "-o", str(tmp_path / "lock.toml"))
    assert proc.returncode == 0, proc.stderr
    assert "but its bytes are zstd" in proc.stdout
    lock = tomllib.loads((tmp_path / "lock.toml").read_text())
    assert any("labelled application/vnd.oci.image.layer.v1.tar+gzip (gzip) but its bytes "
               "are zstd" in w for w in lock["warnings"]), lock["warnings"]
    assert "python:six" in json.dumps(lock)


def test_a_correctly_labelled_layer_is_not_warned_about(tmp_path: Path) -> None:
    src = _image(tmp_path, gzip.compress(BASE, mtime=0), GZIP_LAYER, BASE)
    proc = _prov("pin", src, "-o", str(tmp_path / "lock.toml"))
    assert proc.returncode == 0, proc.stderr
    lock = tomllib.loads((tmp_path / "lock.toml").read_text())
    assert not any("labelled" in w for w in lock.get("warnings", []))


def test_data_after_a_docker_archive_s_end_is_refused(tmp_path: Path) -> None:
    """The outer `docker save` tar too: files appended after its end are covered by no
    digest and `tar -i` would extract them."""
    from tests.fixtures.oci_pack import write_docker_archive

    out = tmp_path / "image.tar"
    write_docker_archive(out, [BASE], image_config([BASE], ["x"], []), "t:1")
    with open(out, "ab") as fh:
        fh.write(HIDDEN)
    _refused(_prov("pin", f"docker-archive:{out}", "-o", str(tmp_path / "lock.toml")),
             "end-of-archive")


def test_names_from_the_image_are_printed_as_they_are(tmp_path: Path) -> None:
    """A file name is data, never console markup: `[/bold]` once crashed `prov pin` (rich
    raised on the stray closing tag) and `[files]` vanished from its summary."""
    name = f"{SITE}/[/bold][red]x[/red]"
    stream = _tar({"etc/os-release": OS_RELEASE, f"{SITE}/six-1.17.0.dist-info/METADATA": META,
                   f"{SITE}/six-1.17.0.dist-info/RECORD": b"six.py,,\n", name: b"x"})
    src = _image(tmp_path, gzip.compress(stream, mtime=0), GZIP_LAYER, stream)
    proc = _prov("pin", src, "-o", str(tmp_path / "lock.toml"))
    assert proc.returncode == 0, proc.stderr
    assert f"/{name}" in proc.stdout
