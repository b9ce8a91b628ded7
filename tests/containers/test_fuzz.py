"""Hypothesis fuzzing of the two untrusted parsers: tar headers and JSON documents.

Whatever the bytes, the only exception that may escape is ImageError. Fixed budget
(derandomized, a set number of examples) so CI time is bounded and runs are repeatable.
"""

from __future__ import annotations

import contextlib
import io
import json
import tarfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from containers.digest import sha256_of
from containers.errors import ImageError
from containers.resolve import resolve
from containers.tarstream import entries
from containers.walk import CONTENT, Layer, walk

BUDGET = settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)


def _seed_tar() -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for name, data in (("etc/os-release", b"ID=x\n"), ("a/" + "n" * 120, b"long")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("etc/l")
        link.type = tarfile.SYMTYPE
        link.linkname = "os-release"
        tf.addfile(link)
        wh = tarfile.TarInfo("a/.wh..wh..opq")
        tf.addfile(wh)
    return buf.getvalue()


SEED = _seed_tar()


def _consume(data: bytes) -> None:
    chunks = iter([data[i : i + 700] for i in range(0, len(data), 700)])
    for _entry, read_body in entries(lambda: next(chunks, b""), "fuzz"):
        if _entry.size < 1 << 16:
            read_body()


@BUDGET
@given(
    st.lists(
        st.tuples(st.integers(0, len(SEED) - 1), st.integers(0, 255)), min_size=1, max_size=12
    ),
    st.integers(0, len(SEED)),
)
def test_mutated_tar_headers(mutations, cut) -> None:
    data = bytearray(SEED)
    for pos, value in mutations:
        data[pos] = value
    for blob in (bytes(data), bytes(data[:cut])):
        with contextlib.suppress(ImageError):
            _consume(blob)


@BUDGET
@given(st.binary(min_size=0, max_size=2048))
def test_random_tar_bytes_through_the_walker(data: bytes) -> None:
    class Raw:
        def __init__(self) -> None:
            self.f = io.BytesIO(data)

        def read(self, n: int = -1) -> bytes:
            return self.f.read(n)

    with contextlib.suppress(ImageError):
        walk([Layer(0, "fuzz", Raw)], lambda p: CONTENT)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=5)
    ),
    max_leaves=25,
)
KEYS = st.sampled_from(
    [
        "mediaType",
        "manifests",
        "digest",
        "size",
        "platform",
        "config",
        "layers",
        "schemaVersion",
        "rootfs",
        "diff_ids",
        "history",
        "annotations",
    ]
)
DOC = st.dictionaries(KEYS, JSON, max_size=8)


class Store:
    def __init__(self, docs: dict[str, bytes]) -> None:
        self.docs = docs

    def document(self, digest: str, what: str) -> bytes:
        if digest not in self.docs:
            raise ImageError(f"{what}: missing")
        return self.docs[digest]

    def open(self, digest, size, what):
        raise ImageError("no blobs here")


@BUDGET
@given(DOC, st.lists(DOC, max_size=3), st.binary(max_size=64))
def test_json_documents(root: dict, others: list[dict], junk: bytes) -> None:
    docs = {}
    for doc in others:
        raw = json.dumps(doc).encode()
        docs[sha256_of(raw)] = raw
    docs[sha256_of(junk)] = junk
    # let the root point at the generated documents sometimes
    if docs and isinstance(root.get("manifests"), list) and root["manifests"]:
        first = root["manifests"][0]
        if isinstance(first, dict):
            first["digest"] = next(iter(docs))
    for raw in (json.dumps(root).encode(), junk):
        with contextlib.suppress(ImageError):
            resolve(Store(docs), raw, sha256_of(raw), "fuzz", "linux/amd64")
