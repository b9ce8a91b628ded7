"""Hostile images built in code: one OCI layout per case (issue #19 section 4).

Each builder writes `oci/` under a directory and returns nothing; `CASES` maps a case name to
(builder, expectation). Expectations: "refused" (exit 2, one line), "warned" (exit 0, the
lock carries a warning) or "skipped" (a file inside the image read as malformed: exit 0, the
file contributes nothing). Used by the tests beside this file and by bench/bench_hostile_images.py
(the before/after census).
"""

from __future__ import annotations

import io
import json
import tarfile
from collections.abc import Callable
from pathlib import Path

from tests.fixtures.oci_pack import image_config, sha, write_oci

OS_RELEASE = b'ID=debian\nVERSION_ID="12"\n'
DEEP = 100_000


def tar(
    entries: list[tuple[tarfile.TarInfo, bytes | None]], fmt: int = tarfile.GNU_FORMAT
) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as tf:
        for info, data in entries:
            if data is not None:
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
            else:
                tf.addfile(info)
    return buf.getvalue()


def file(name: str, data: bytes = b"x") -> tuple[tarfile.TarInfo, bytes]:
    return tarfile.TarInfo(name), data


def link(name: str, target: str, kind: bytes = tarfile.SYMTYPE) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    return info, None


def directory(name: str) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE
    return info, None


def base_layer() -> bytes:
    return tar([file("etc/os-release", OS_RELEASE), file("usr/bin/python3", b"#!py")])


def checksum(header: bytearray) -> None:
    header[148:156] = b" " * 8
    header[148:156] = b"%06o\0 " % sum(header)


def layout(root: Path, layers: list[bytes], config: bytes | None = None) -> Path:
    out = root / "oci"
    write_oci(out, layers, config or image_config(layers, ["x"] * len(layers), []), "t", level=1)
    return out


def _patch_size(layer: bytes, index: int, field: bytes) -> bytes:
    """Header number `index` (0-based, of all 512-byte headers walked in order) given a new
    size field."""
    data = bytearray(layer)
    pos, seen = 0, 0
    while pos < len(data):
        header = data[pos : pos + 512]
        if header == bytes(512):
            break
        size = int(header[124:136].rstrip(b"\0 ") or b"0", 8)
        if seen == index:
            head = bytearray(header)
            head[124:136] = field
            checksum(head)
            data[pos : pos + 512] = head
            return bytes(data)
        pos += 512 + (size + 511) // 512 * 512
        seen += 1
    raise ValueError("no such header")


def negative_octal(root: Path) -> None:
    """`-0000002000` (-1024): back onto the empty member `a`'s header, forever."""
    layer = tar([file("etc/os-release", OS_RELEASE), file("a", b""), file("b", b"z")])
    layout(root, [_patch_size(layer, 2, b"-0000002000\0")])


def negative_octal_self(root: Path) -> None:
    """`-0000001000` (-512): back onto its own header, forever."""
    layer = tar([file("etc/os-release", OS_RELEASE), file("b", b"z")])
    layout(root, [_patch_size(layer, 1, b"-0000001000\0")])


def negative_base256(root: Path) -> None:
    layer = tar([file("etc/os-release", OS_RELEASE), file("b", b"z")])
    layout(root, [_patch_size(layer, 1, b"\xff" * 12)])


def huge_base256(root: Path) -> None:
    layer = tar([file("etc/os-release", OS_RELEASE), file("b", b"z")])
    layout(root, [_patch_size(layer, 1, b"\x80" + b"\x7f" * 11)])


def _pax_layer(size_value: bytes) -> bytes:
    record = b" size=" + size_value + b"\n"
    length = len(record) + 2
    length += len(str(length)) - 2
    record = str(length).encode() + record
    pax = tarfile.TarInfo("././@PaxHeader")
    pax.type = tarfile.XHDTYPE
    return tar([file("etc/os-release", OS_RELEASE), (pax, record), file("b", b"z" * 600)])


def pax_negative(root: Path) -> None:
    layout(root, [_pax_layer(b"-1536")])


def pax_plus(root: Path) -> None:
    layout(root, [_pax_layer(b"+1")])


def pax_underscore(root: Path) -> None:
    layout(root, [_pax_layer(b"1_0")])


def pax_huge(root: Path) -> None:
    layout(root, [_pax_layer(b"9" * 40)])


def _deep() -> bytes:
    return b"[" * DEEP + b"]" * DEEP


def deep_config(root: Path) -> None:
    layers = [base_layer()]
    config = json.loads(image_config(layers, ["x"], []))
    config["config"]["Labels"] = {"x": "__DEEP__"}
    raw = json.dumps(config).encode().replace(b'"__DEEP__"', _deep())
    layout(root, layers, raw)


def _rewrite_root(root: Path, edit: Callable[[dict], bytes]) -> None:
    out = root / "oci"
    index = json.loads((out / "index.json").read_text())
    (out / "index.json").write_bytes(edit(index))


def deep_index(root: Path) -> None:
    layout(root, [base_layer()])

    def edit(index: dict) -> bytes:
        index["annotations"] = {"x": "__DEEP__"}
        return json.dumps(index).encode().replace(b'"__DEEP__"', _deep())

    _rewrite_root(root, edit)


def deep_manifest(root: Path) -> None:
    out = layout(root, [base_layer()])
    index = json.loads((out / "index.json").read_text())
    desc = index["manifests"][0]
    blob = out / "blobs" / "sha256" / desc["digest"].split(":")[1]
    manifest = json.loads(blob.read_bytes())
    manifest["annotations"] = {"x": "__DEEP__"}
    raw = json.dumps(manifest).encode().replace(b'"__DEEP__"', _deep())
    (out / "blobs" / "sha256" / sha(raw).split(":")[1]).write_bytes(raw)
    desc["digest"], desc["size"] = sha(raw), len(raw)
    (out / "index.json").write_text(json.dumps(index))


def deep_conda(root: Path) -> None:
    layout(
        root,
        [
            tar(
                [
                    file("etc/os-release", OS_RELEASE),
                    file("opt/conda/conda-meta/x-1.0-0.json", _deep()),
                ]
            )
        ],
    )


def deep_cuda(root: Path) -> None:
    layout(
        root,
        [tar([file("etc/os-release", OS_RELEASE), file("usr/local/cuda/version.json", _deep())])],
    )


def env_not_list(root: Path) -> None:
    layers = [base_layer()]
    config = json.loads(image_config(layers, ["x"], []))
    config["config"]["Env"] = 5
    layout(root, layers, json.dumps(config).encode())


def config_not_object(root: Path) -> None:
    layers = [base_layer()]
    config = json.loads(image_config(layers, ["x"], []))
    config["config"] = [1, 2]
    layout(root, layers, json.dumps(config).encode())


DIST = "usr/lib/python3/dist-packages/evil-1.0.dist-info"


def record_quote(root: Path) -> None:
    meta = b"Metadata-Version: 2.1\nName: evil\nVersion: 1.0\n"
    # the quote runs to the end, past csv's 128 KiB field limit
    record = b'evil/__init__.py,sha256=abc,3\n"evil/unterminated.py,sha256=x,1\n' + b"y" * 200_000
    layout(
        root,
        [
            tar(
                [
                    file("etc/os-release", OS_RELEASE),
                    file(f"{DIST}/METADATA", meta),
                    file(f"{DIST}/RECORD", record),
                    file("usr/lib/python3/dist-packages/evil/__init__.py", b"x=1"),
                ]
            )
        ],
    )


def big_metadata(root: Path, count: int = 16, size: int = 60 << 20) -> None:
    entries = [file("etc/os-release", OS_RELEASE)]
    pad = b"Metadata-Version: 2.1\nName: p%d\nVersion: 1.0\n\n"
    for i in range(count):
        body = pad % i
        entries.append(
            file(
                f"usr/lib/python3/dist-packages/p{i}-1.0.dist-info/METADATA",
                body + b"x" * (size - len(body)),
            )
        )
    layout(root, [tar(entries)])


def absolute_name(root: Path) -> None:
    layout(root, [tar([file("/etc/os-release", OS_RELEASE)])])


def symlink_write_through(root: Path) -> None:
    layout(
        root,
        [
            tar(
                [
                    file("etc/os-release", OS_RELEASE),
                    link("esc", "/../../../tmp"),
                    file("esc/pwned", b"x"),
                ]
            )
        ],
    )


def duplicate_entries(root: Path) -> None:
    layout(
        root, [tar([file("etc/os-release", b"ID=alpine\n"), file("etc/os-release", OS_RELEASE)])]
    )


def opaque_root(root: Path) -> None:
    layout(
        root, [base_layer(), tar([file(".wh..wh..opq", b""), file("etc/os-release", OS_RELEASE)])]
    )


def non_utf8_name(root: Path) -> None:
    info = tarfile.TarInfo("x")
    entries = [file("etc/os-release", OS_RELEASE), (info, b"y")]
    layer = bytearray(tar(entries))
    # rename the second member to bytes that are not UTF-8
    pos = 512 + 512
    layer[pos : pos + 100] = b"bad\xff\xfename".ljust(100, b"\0")
    head = bytearray(layer[pos : pos + 512])
    checksum(head)
    layer[pos : pos + 512] = head
    layout(root, [bytes(layer)])


CASES: dict[str, tuple[Callable[[Path], None], str]] = {
    "negative octal size": (negative_octal, "refused"),
    "negative octal size onto itself": (negative_octal_self, "refused"),
    "negative base-256 size": (negative_base256, "refused"),
    "huge base-256 size": (huge_base256, "refused"),
    "PAX size=-1536": (pax_negative, "refused"),
    "PAX size=+1": (pax_plus, "refused"),
    "PAX size=1_0": (pax_underscore, "refused"),
    "PAX size 40 digits": (pax_huge, "refused"),
    "deep JSON in index": (deep_index, "refused"),
    "deep JSON in manifest": (deep_manifest, "refused"),
    "deep JSON in config": (deep_config, "refused"),
    "deep conda-meta JSON": (deep_conda, "skipped"),
    "deep cuda version.json": (deep_cuda, "skipped"),
    "Env: 5": (env_not_list, "refused"),
    "config: a list": (config_not_object, "refused"),
    "RECORD unterminated quote": (record_quote, "skipped"),
    "absolute member name": (absolute_name, "warned"),
    "symlink out, file written through": (symlink_write_through, "refused"),
    "duplicate entries": (duplicate_entries, "warned"),
    "opaque /": (opaque_root, "warned"),
    "non-UTF-8 name": (non_utf8_name, "warned"),
}
