"""The bench's own image: >= 1 GB of layers from real and generated parts, in three
compressions (gzip, zstd, none), built once and cached outside the repository.

Layer 0: the tests' Debian bookworm rootfs (debootstrap minbase, its dpkg md5sums real).
Layer 1: a site-packages distribution `bigpkg` whose RECORD lists every file: 400 MiB of
incompressible bytes in 50 files (weights, .so-like) and 400 MiB of compressible text in
25,600 files of 16 KiB (source-like; many members exercise per-member overhead).
Layer 2: a fix-up: one file rewritten, a few deleted by whiteouts.
Layers are written as files and compressed by `gzip -6 -n` / `zstd -3` (what builders use).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import random
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

VERSION = "bench-images-v1"
CACHE = Path(os.environ.get("PROV_TEST_CACHE", Path.home() / ".cache" / "prov-tests")) / VERSION
SITE = "opt/venv/lib/python3.11/site-packages"
MEDIA = {
    "gzip": "application/vnd.oci.image.layer.v1.tar+gzip",
    "zstd": "application/vnd.oci.image.layer.v1.tar+zstd",
    "none": "application/vnd.oci.image.layer.v1.tar",
}
COMPRESS = {"gzip": ["gzip", "-6", "-n", "-c"], "zstd": ["zstd", "-3", "-q", "-c"]}


def _file_hash(path: Path, algo: str = "sha256") -> str:
    h = hashlib.new(algo)
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def _add(tf: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), 0o644, 1_700_000_000
    tf.addfile(info, io.BytesIO(data))


def _record_row(rel: str, data: bytes) -> str:
    import base64

    b64 = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{rel},sha256={b64},{len(data)}"


def _text_block(rng: random.Random) -> bytes:
    words = [
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz_") for _ in range(rng.randint(2, 12)))
        for _ in range(4000)
    ]
    lines = []
    while sum(map(len, lines)) < (1 << 20):
        lines.append("    " * rng.randint(0, 3) + " ".join(rng.choices(words, k=8)) + "\n")
    return "".join(lines).encode()[: 1 << 20]


def _layer1(out: Path) -> None:
    rng = random.Random(22)
    block = _text_block(rng)
    rows = []
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tf:
        for i in range(50):
            data = rng.randbytes(8 << 20)
            rel = f"bigpkg/lib/blob{i:02d}.so"
            _add(tf, f"{SITE}/{rel}", data)
            rows.append(_record_row(rel, data))
        for i in range(25_600):
            start = (i * 7919) % ((1 << 20) - (16 << 10))
            data = f"# module {i}\n".encode() + block[start : start + (16 << 10)]
            rel = f"bigpkg/mod{i // 256:03d}/m{i:05d}.py"
            _add(tf, f"{SITE}/{rel}", data)
            rows.append(_record_row(rel, data))
        dist = "bigpkg-1.0.dist-info"
        meta = {"METADATA": b"Metadata-Version: 2.1\nName: bigpkg\nVersion: 1.0\n\n"}
        meta["INSTALLER"] = b"pip\n"
        rows += [_record_row(f"{dist}/{k}", v) for k, v in meta.items()]
        rows.append(f"{dist}/RECORD,,")
        meta["RECORD"] = ("\n".join(rows) + "\n").encode()
        for k, v in meta.items():
            _add(tf, f"{SITE}/{dist}/{k}", v)


def _layer2(out: Path) -> None:
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tf:
        _add(tf, f"{SITE}/bigpkg/mod000/m00001.py", b"# rewritten by the fix-up layer\n")
        for i in (2, 3, 4):
            _add(tf, f"{SITE}/bigpkg/mod000/.wh.m{i:05d}.py", b"")


def _layer0(out: Path) -> None:
    from tests.fixtures.images import build_test_image
    from tests.fixtures.oci_pack import _add_tree

    rootfs = build_test_image().after
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tf:
        _add_tree(tf, rootfs, "")


def _put(blobs: Path, path: Path) -> dict:
    digest = _file_hash(path)
    target = blobs / digest
    if not target.exists():
        path.rename(target)
    return {"digest": f"sha256:{digest}", "size": target.stat().st_size}


def _write_layout(out: Path, raw: list[Path], codec: str, diff_ids: list[str]) -> None:
    blobs = out / "blobs" / "sha256"
    blobs.mkdir(parents=True, exist_ok=True)
    descs = []
    for tar in raw:
        tmp = out / "layer.tmp"
        if codec == "none":
            subprocess.run(["cp", tar, tmp], check=True)
        else:
            with open(tmp, "wb") as fh:
                subprocess.run([*COMPRESS[codec], tar], stdout=fh, check=True)
        descs.append({"mediaType": MEDIA[codec], **_put(blobs, tmp)})
    config = {
        "architecture": "amd64",
        "os": "linux",
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
        "history": [{"created_by": f"bench layer {i}"} for i in range(len(raw))],
    }
    cpath = out / "config.tmp"
    cpath.write_bytes(json.dumps(config, sort_keys=True).encode())
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", **_put(blobs, cpath)},
        "layers": descs,
    }
    mpath = out / "manifest.tmp"
    mpath.write_bytes(json.dumps(manifest).encode())
    entry = {"mediaType": manifest["mediaType"], **_put(blobs, mpath)}
    entry["annotations"] = {"org.opencontainers.image.ref.name": "bench"}
    index = {"schemaVersion": 2, "manifests": [entry]}
    (out / "index.json").write_text(json.dumps(index))
    (out / "oci-layout").write_text(json.dumps({"imageLayoutVersion": "1.0.0"}))


def build_bench_image() -> dict[str, Path]:
    """codec -> OCI layout directory (built once per VERSION)."""
    layouts = {codec: CACHE / codec for codec in MEDIA}
    if (CACHE / "done").exists():
        return layouts
    CACHE.mkdir(parents=True, exist_ok=True)
    raw = [CACHE / f"layer{i}.tar" for i in range(3)]
    for build, path in zip((_layer0, _layer1, _layer2), raw, strict=True):
        build(path)
    diff_ids = [f"sha256:{_file_hash(p)}" for p in raw]
    for codec, out in layouts.items():
        _write_layout(out, raw, codec, diff_ids)
    for path in raw:
        path.unlink()
    (CACHE / "done").write_text(VERSION)
    return layouts


if __name__ == "__main__":
    for codec, path in build_bench_image().items():
        print(codec, path)
