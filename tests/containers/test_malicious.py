"""Malicious and broken images: each is one clear ImageError, and nothing is written."""

from __future__ import annotations

import gzip
import io
import json
import os
import tarfile
import zlib
from pathlib import Path

import pytest

from containers import ImageError, scan_image
from tests.fixtures.oci_pack import image_config, sha, write_oci


def _tar(entries: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tf:
        for info, data in entries:
            if data is not None:
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
            else:
                tf.addfile(info)
    return buf.getvalue()


def _file(name: str, data: bytes = b"x") -> tuple[tarfile.TarInfo, bytes]:
    return tarfile.TarInfo(name), data


def _link(name: str, target: str, kind: bytes = tarfile.SYMTYPE) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    return info, None


OS_RELEASE = b'ID=debian\nVERSION_ID="12"\n'


def _layout(tmp: Path, layers: list[bytes]) -> Path:
    out = tmp / "oci"
    write_oci(out, layers, image_config(layers, ["x"] * len(layers), []), "t", level=1)
    return out


def _scan_refused(tmp: Path, source: str, match: str) -> str:
    before = set(os.listdir(tmp))
    cwd = os.getcwd()
    os.chdir(tmp)
    try:
        with pytest.raises(ImageError, match=match) as info:
            scan_image(source)
    finally:
        os.chdir(cwd)
    assert set(os.listdir(tmp)) == before  # nothing written next to it
    message = str(info.value)
    assert "\n" not in message
    return message


def test_path_traversal(tmp_path: Path) -> None:
    layer = _tar([_file("etc/os-release", OS_RELEASE), _file("../../evil", b"pwned")])
    _scan_refused(tmp_path, f"oci:{_layout(tmp_path, [layer])}", "path traversal")
    assert not (tmp_path.parent / "evil").exists()


def test_escaping_relative_symlink(tmp_path: Path) -> None:
    layer = _tar([_link("etc/os-release", "../../../../../etc/os-release")])
    _scan_refused(tmp_path, f"oci:{_layout(tmp_path, [layer])}", "escapes the image root")


def test_escaping_absolute_symlink(tmp_path: Path) -> None:
    layer = _tar([_link("etc/os-release", "/../../etc/os-release")])
    _scan_refused(tmp_path, f"oci:{_layout(tmp_path, [layer])}", "escapes the image root")


def test_absolute_symlink_resolves_inside_the_image(tmp_path: Path) -> None:
    """`/usr/lib/os-release` means the image's file, never the host's."""
    layer = _tar(
        [
            _file("usr/lib/os-release", b"ID=inside\n"),
            _link("etc/os-release", "/usr/lib/os-release"),
        ]
    )
    scan = scan_image(f"oci:{_layout(tmp_path, [layer])}")
    assert scan.os["release"] == {"id": "inside"}


def test_hardlink_to_missing_target(tmp_path: Path) -> None:
    layer = _tar([_link("usr/bin/x", "usr/bin/nowhere", tarfile.LNKTYPE)])
    _scan_refused(tmp_path, f"oci:{_layout(tmp_path, [layer])}", "missing target")


def test_device_file(tmp_path: Path) -> None:
    info = tarfile.TarInfo("dev/sda")
    info.type = tarfile.BLKTYPE
    info.devmajor, info.devminor = 8, 0
    _scan_refused(tmp_path, f"oci:{_layout(tmp_path, [_tar([(info, None)])])}", "device file")


def _bomb_layout(tmp: Path, compress) -> Path:
    """A layer whose one file is 300 MiB of zeros: a few hundred KiB compressed."""
    header = tarfile.TarInfo("zeros")
    header.size = 300 << 20
    head = header.tobuf(format=tarfile.GNU_FORMAT)
    blob = compress(head, header.size)
    # the config's DiffID is never reached: the bomb is refused while streaming
    fake = _tar([_file("zeros", b"")])
    out = tmp / "oci"
    write_oci(out, [fake], image_config([fake], ["bomb"], []), "t", level=1)
    manifest_path = _only_manifest(out)
    manifest = json.loads(manifest_path.read_bytes())
    (out / "blobs/sha256" / sha(blob).split(":")[1]).write_bytes(blob)
    manifest["layers"][0].update(digest=sha(blob), size=len(blob))
    _replace_manifest(out, manifest)
    return out


def _gzip_stream(head: bytes, zeros: int) -> bytes:
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [comp.compress(head)]
    chunk = bytes(1 << 20)
    for _ in range(zeros >> 20):
        parts.append(comp.compress(chunk))
    parts.append(comp.compress(bytes(1024)))
    parts.append(comp.flush())
    return b"".join(parts)


def _zstd_stream(head: bytes, zeros: int) -> bytes:
    import zstandard

    comp = zstandard.ZstdCompressor(level=3).compressobj()
    parts = [comp.compress(head)]
    chunk = bytes(1 << 20)
    for _ in range(zeros >> 20):
        parts.append(comp.compress(chunk))
    parts.append(comp.compress(bytes(1024)))
    parts.append(comp.flush())
    return b"".join(parts)


def _only_manifest(out: Path) -> Path:
    index = json.loads((out / "index.json").read_text())
    return out / "blobs/sha256" / index["manifests"][0]["digest"].split(":")[1]


def _replace_manifest(out: Path, manifest: dict) -> None:
    data = json.dumps(manifest).encode()
    (out / "blobs/sha256" / sha(data).split(":")[1]).write_bytes(data)
    index = json.loads((out / "index.json").read_text())
    index["manifests"][0].update(digest=sha(data), size=len(data))
    (out / "index.json").write_text(json.dumps(index))


@pytest.mark.parametrize("compress", [_gzip_stream, _zstd_stream], ids=["gzip", "zstd"])
def test_decompression_bomb(tmp_path: Path, compress) -> None:
    _scan_refused(tmp_path, f"oci:{_bomb_layout(tmp_path, compress)}", "bomb")


def test_truncated_layer(tmp_path: Path) -> None:
    layer = _tar([_file("etc/os-release", OS_RELEASE), _file("big", os.urandom(200_000))])
    out = _layout(tmp_path, [layer])
    manifest = json.loads(_only_manifest(out).read_bytes())
    blob = gzip.compress(layer, mtime=0)[: len(layer) // 3]
    (out / "blobs/sha256" / sha(blob).split(":")[1]).write_bytes(blob)
    manifest["layers"][0].update(digest=sha(blob), size=len(blob))
    _replace_manifest(out, manifest)
    _scan_refused(tmp_path, f"oci:{out}", "truncated")


def test_blob_digest_mismatch(tmp_path: Path) -> None:
    layer = _tar([_file("etc/os-release", OS_RELEASE)])
    out = _layout(tmp_path, [layer])
    manifest = json.loads(_only_manifest(out).read_bytes())
    path = out / "blobs/sha256" / manifest["layers"][0]["digest"].split(":")[1]
    data = bytearray(path.read_bytes())
    data[-9] ^= 0xFF  # inside the gzip trailer: still decodes far enough to be read
    path.write_bytes(bytes(data))
    _scan_refused(tmp_path, f"oci:{out}", "digest mismatch|corrupt gzip|DiffID mismatch")


def test_uncompressed_blob_digest_mismatch(tmp_path: Path) -> None:
    """A flipped byte inside a file of an uncompressed layer: only the digest can tell."""
    layer = _tar([_file("etc/os-release", OS_RELEASE), _file("data", b"a" * 4000)])
    out = tmp_path / "oci"
    write_oci(out, [layer], image_config([layer], ["x"], []), "t", level=1)
    manifest = json.loads(_only_manifest(out).read_bytes())
    (out / "blobs/sha256" / sha(layer).split(":")[1]).write_bytes(layer)
    manifest["layers"][0].update(
        digest=sha(layer), size=len(layer), mediaType="application/vnd.oci.image.layer.v1.tar"
    )
    _replace_manifest(out, manifest)
    path = out / "blobs/sha256" / sha(layer).split(":")[1]
    data = bytearray(layer)
    data[data.index(b"aaaa")] = ord("b")
    path.write_bytes(bytes(data))
    _scan_refused(tmp_path, f"oci:{out}", "digest mismatch")


@pytest.mark.parametrize("which", ["index", "manifest", "config"])
def test_malformed_json(tmp_path: Path, which: str) -> None:
    layer = _tar([_file("etc/os-release", OS_RELEASE)])
    out = _layout(tmp_path, [layer])
    if which == "index":
        (out / "index.json").write_text('{"manifests": [')
    elif which == "manifest":
        bad = b'{"schemaVersion": 2, "config": '
        (out / "blobs/sha256" / sha(bad).split(":")[1]).write_bytes(bad)
        index = json.loads((out / "index.json").read_text())
        index["manifests"][0].update(digest=sha(bad), size=len(bad))
        (out / "index.json").write_text(json.dumps(index))
    else:
        bad = b'{"rootfs": {"diff_ids": ['
        (out / "blobs/sha256" / sha(bad).split(":")[1]).write_bytes(bad)
        manifest = json.loads(_only_manifest(out).read_bytes())
        manifest["config"].update(digest=sha(bad), size=len(bad))
        _replace_manifest(out, manifest)
    _scan_refused(tmp_path, f"oci:{out}", "malformed JSON")


def test_index_pointing_to_itself(tmp_path: Path) -> None:
    """A nested index naming its own digest (possible only with bytes that do not hash to
    it) and a loop of two: refused, never followed forever."""
    layer = _tar([_file("etc/os-release", OS_RELEASE)])
    out = _layout(tmp_path, [layer])
    fake = "sha256:" + "ab" * 32
    loop = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [
            {"mediaType": "application/vnd.oci.image.index.v1+json", "digest": fake, "size": 10}
        ],
    }
    (out / "blobs/sha256" / ("ab" * 32)).write_text(json.dumps(loop))
    index = json.loads((out / "index.json").read_text())
    index["manifests"][0].update(digest=fake, mediaType=loop["mediaType"])
    (out / "index.json").write_text(json.dumps(index))
    _scan_refused(tmp_path, f"oci:{out}", "refers to itself|digest mismatch")


def test_resolver_refuses_a_cycle_it_is_served() -> None:
    """A source that serves documents without hashing them (a broken registry mirror):
    the resolver's own cycle check stops the loop."""
    from containers.resolve import resolve

    a, b = "sha256:" + "aa" * 32, "sha256:" + "bb" * 32

    def index(to: str) -> bytes:
        return json.dumps(
            {
                "mediaType": "application/vnd.oci.image.index.v1+json",
                "manifests": [
                    {"digest": to, "size": 1, "platform": {"os": "linux", "architecture": "amd64"}}
                ],
            }
        ).encode()

    class Served:
        def document(self, digest: str, what: str) -> bytes:
            return index(b if digest == a else a)

        def open(self, *args):
            raise AssertionError("never reached")

    with pytest.raises(ImageError, match="refers to itself"):
        resolve(Served(), index(a), None, "test", "linux/amd64")
