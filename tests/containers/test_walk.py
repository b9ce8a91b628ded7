"""Whiteouts, opaque directories, replacement across layers, and compressions."""

from __future__ import annotations

import gzip
import io
import tarfile

import pytest
import zstandard

from containers.errors import ImageError
from containers.walk import CONTENT, NAME, Layer, walk


def _tar(*entries: tuple[str, bytes | str | None]) -> bytes:
    """(name, bytes) files, (name, "->target") symlinks, (name, None) directories."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for name, data in entries:
            info = tarfile.TarInfo(name)
            if data is None:
                info.type = tarfile.DIRTYPE
                tf.addfile(info)
            elif isinstance(data, str):
                info.type = tarfile.SYMTYPE
                info.linkname = data[2:]
                tf.addfile(info)
            else:
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


class Raw:
    def __init__(self, data: bytes) -> None:
        self.f = io.BytesIO(data)

    def read(self, n: int = -1) -> bytes:
        return self.f.read(n)


def _walk(*layers: bytes, wants=lambda p: CONTENT):
    return walk([Layer(i, f"l{i}", lambda d=d: Raw(d)) for i, d in enumerate(layers)], wants)


def test_whiteout_removes_lower_file_and_subtree() -> None:
    view = _walk(
        _tar(("a/x", b"1"), ("a/y", b"2"), ("b/c/d", b"3"), ("b/e", b"4")),
        _tar(("a/.wh.x", b""), ("b/.wh.c", b"")),
    )
    assert sorted(view.files) == ["a/y", "b/e"]


def test_opaque_applies_before_siblings_in_any_order() -> None:
    lower = _tar(("d/old", b"1"), ("d/sub/old2", b"2"), ("other", b"3"))
    for upper in (
        _tar(("d/new", b"4"), ("d/.wh..wh..opq", b"")),  # marker after its sibling
        _tar(("d/.wh..wh..opq", b""), ("d/new", b"4")),
    ):
        view = _walk(lower, upper)
        assert sorted(view.files) == ["d/new", "other"]
        assert view.files["d/new"] == (1, b"4")


def test_whiteout_then_readd_in_a_later_layer_and_replacement() -> None:
    view = _walk(
        _tar(("f", b"v1"), ("g", b"g")),
        _tar((".wh.f", b""), ("g", b"g2")),
        _tar(("f", b"v3")),
    )
    assert view.files == {"f": (2, b"v3"), "g": (1, b"g2")}


def test_symlink_replaced_by_file_and_whiteout_entries_hidden() -> None:
    view = _walk(
        _tar(("etc/os-release", "->../usr/lib/os-release")), _tar(("etc/os-release", b"ID=x\n"))
    )
    assert view.links == {} and view.files["etc/os-release"] == (1, b"ID=x\n")
    assert not any(".wh." in p for p in view.files)


def test_name_only_wants_keep_no_bytes() -> None:
    view = _walk(_tar(("usr/lib/libnccl.so.2.21.5", b"\x7fELF" * 100)), wants=lambda p: NAME)
    assert view.names == {"usr/lib/libnccl.so.2.21.5": 0} and view.files == {}


@pytest.mark.parametrize("codec", ["gzip", "zstd", "none"])
def test_compressions_are_sniffed(codec: str) -> None:
    layer = _tar(("etc/os-release", b"ID=x\n"))
    data = {
        "gzip": lambda: gzip.compress(layer),
        "zstd": lambda: zstandard.ZstdCompressor().compress(layer),
        "none": lambda: layer,
    }[codec]()
    seen = {}
    walk(
        [Layer(0, "l0", lambda: Raw(data))],
        lambda p: CONTENT,
        on_layer=lambda i, stream, staged: seen.update(c=stream.compression, d=stream.diff_id),
    )
    from containers.digest import sha256_of

    assert seen == {"c": codec, "d": sha256_of(layer)}


def test_opaque_root_and_symlink_loop() -> None:
    view = _walk(_tar(("a", b"1"), ("d/b", b"2")), _tar((".wh..wh..opq", b""), ("c", b"3")))
    assert sorted(view.files) == ["c"]
    loop = _walk(_tar(("x", "->y"), ("y", "->x")))
    from containers.errors import ImageError

    with pytest.raises(ImageError, match="loops"):
        loop.read("x")


# ---- a blob listed more than once is read once (issue #30) ---------------------------------
def _listed(blobs: dict[str, bytes], order: list[str], keyed: bool, hash_files: bool = False):
    """Walk `order` (names of `blobs`); keyed: repeated blobs carry their key, as the scan
    gives them. Returns the view and how often each blob was opened."""
    opened: dict[str, int] = dict.fromkeys(blobs, 0)

    def opener(name: str):
        opened[name] += 1
        return Raw(blobs[name])

    last = {name: i for i, name in enumerate(order)}
    layers = [Layer(i, f"l{i}", lambda n=name: opener(n),
                    name if keyed and order.count(name) > 1 else None, last[name] == i)
              for i, name in enumerate(order)]
    return walk(layers, lambda p: CONTENT, hash_files=hash_files), opened


def _same_view(a, b) -> None:
    assert a.files == b.files and a.links == b.links and a.names == b.names
    assert a.digests == b.digests and a.deleted == b.deleted


def test_a_repeated_blob_is_read_once_and_gives_the_view_of_every_listing() -> None:
    """A, B (deletes A's file, adds its own), A again: A's file is back, written by the third
    listing, exactly as applying the three in order gives."""
    blobs = {"A": _tar(("etc/conf", b"a"), ("usr/lib/x", b"1")),
             "B": _tar(("etc/.wh.conf", b""), ("usr/lib/y", b"2"))}
    order = ["A", "B", "A", "A"]
    fresh, opened_fresh = _listed(blobs, order, keyed=False, hash_files=True)
    once, opened_once = _listed(blobs, order, keyed=True, hash_files=True)
    assert opened_fresh == {"A": 3, "B": 1} and opened_once == {"A": 1, "B": 1}
    _same_view(once, fresh)
    assert once.files["etc/conf"] == (3, b"a") and once.digests["usr/lib/x"].layer == 3


def test_a_repeated_blob_is_checked_again_against_the_links_laid_since() -> None:
    """B turns usr/lib into a symlink out of the root: A listed again writes through it, and
    is refused as reading it afresh would be."""
    blobs = {"A": _tar(("usr/lib/x", b"1")), "B": _tar(("usr/.wh.lib", b""),
                                                       ("usr/lib", "->../../..")),}
    for keyed in (False, True):
        with pytest.raises(ImageError, match="leaves the image root"):
            _listed(blobs, ["A", "B", "A"], keyed=keyed)
