"""One streaming pass over an image's layers: whiteouts applied, nothing extracted to disk.

The result is the final file view restricted to what the catalogers asked for: the bytes of
wanted files, the names of name-only files, and every symlink (to resolve paths inside the
image root). Each layer's whiteouts (`.wh.NAME`, and the opaque marker `.wh..wh..opq`)
delete what lower layers put there; entries of the same layer are staged apart and merged
after the deletions, so an opaque directory is applied before its siblings whatever the
order inside the tar. Memory holds only the wanted files and the symlinks.

A layer blob the image lists more than once is read once (issue #30: one layer listed
100,000 times made every command read it 100,000 times). A later listing re-applies what
that read staged, with the layer's paths checked again against the view at that point (a
symlink laid by a layer in between could now lead a path out of the root), so the view is
the one applying every listing in order would give.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from containers.decompress import Decompressed, Reader
from containers.errors import ImageError
from containers.filehash import FileDigest, MemberDigester
from containers.limits import MAX_RETAINED, member_limit
from containers.tarstream import (
    BLOCKDEV,
    CHARDEV,
    DIRECTORY,
    FIFO,
    HARDLINK,
    SYMLINK,
    Entry,
    entries,
)

WHITEOUT = ".wh."
OPAQUE = ".wh..wh..opq"
MAX_WANTED_FILE = 64 << 20
MAX_LINK_HOPS = 40
MAX_WARNINGS = 200  # then one line counting the rest: warnings must not grow without bound

CONTENT, NAME = "content", "name"
# wants(path) -> None (ignore), NAME (record the name), CONTENT, or a filter over the bytes
Wants = Callable[[str], object]


@dataclass
class Layer:
    index: int
    what: str  # for messages: "layer 3 (sha256:...)"
    open: Callable[[], Reader]  # a verifying reader over the blob
    key: str | None = None  # the blob's digest, when the image lists it more than once
    last: bool = True  # no later listing of `key` follows: its read may be dropped


@dataclass(frozen=True)
class LayerRead:
    """What reading a layer's blob found; the same for every listing of the blob."""

    diff_id: str
    compression: str  # sniffed from the bytes: "gzip", "zstd" or "none"
    compressed: int  # bytes of the blob read


# on_layer(index, read, staged_files): after each listing, DiffID known, digest verified
OnLayer = Callable[[int, LayerRead, dict[str, bytes]], None]


class Staged(NamedTuple):
    """What one layer blob holds, staged apart from the view until it is merged."""

    files: dict[str, bytes]  # wanted files' bytes
    names: set[str]  # name-only wanted files
    links: dict[str, str]  # symlinks
    regular: set[str]  # every regular file (it hides a lower symlink or file)
    whiteouts: set[str]
    opaque: set[str]
    hashed: dict[str, FileDigest]  # file digests (when the walk hashes files)
    nested: list[str]  # paths with a parent: what a later listing checks again


@dataclass
class FileView:
    """The final view: path -> (layer index, bytes) for wanted files, etc."""

    files: dict[str, tuple[int, bytes]] = field(default_factory=dict)
    names: dict[str, int] = field(default_factory=dict)
    links: dict[str, tuple[int, str]] = field(default_factory=dict)
    # every regular file's digests (when the walk hashes files): what verification reads
    digests: dict[str, FileDigest] = field(default_factory=dict)
    deleted: dict[str, int] = field(default_factory=dict)  # path -> the layer that deleted it
    warnings: list[str] = field(default_factory=list)
    retained: int = 0  # bytes of `files` (bounded by MAX_RETAINED)
    dropped_warnings: int = 0

    def warn(self, message: str) -> None:
        if len(self.warnings) < MAX_WARNINGS:
            self.warnings.append(message)
            return
        self.dropped_warnings += 1
        tail = f"... and {self.dropped_warnings} more warnings"
        if self.dropped_warnings == 1:
            self.warnings.append(tail)
        else:
            self.warnings[-1] = tail

    def resolve(self, path: str) -> str | None:
        """`path` with every symlink resolved inside the image root; None if it escapes.

        Absolute targets are relative to the image root (as inside a chroot). A relative
        target that climbs above the root is refused rather than clamped.
        """
        if self._plain(path):
            return path
        parts = [p for p in path.split("/") if p]
        done: list[str] = []
        hops = 0
        while parts:
            part = parts.pop(0)
            if part == ".":
                continue
            if part == "..":
                if not done:
                    return None
                done.pop()
                continue
            here = "/".join([*done, part])
            link = self.links.get(here)
            if link is None:
                done.append(part)
                continue
            hops += 1
            if hops > MAX_LINK_HOPS:
                return None
            target = link[1]
            if target.startswith("/"):
                done = []
            parts = [p for p in target.split("/") if p] + parts
        return "/".join(done)

    def _plain(self, path: str) -> bool:
        """Whether `path` is already normal and no prefix of it is a symlink (the common
        case, answered without splitting: verification resolves every claimed path)."""
        if not path or path[0] == "/" or "//" in path or "/." in path or path[0] == ".":
            return False
        links = self.links
        pos = path.find("/")
        while pos >= 0:
            if path[:pos] in links:
                return False
            pos = path.find("/", pos + 1)
        return path not in links

    def read(self, path: str) -> tuple[int, bytes] | None:
        """A wanted file's (layer, bytes), following symlinks inside the root."""
        real = self.resolve(path)
        if real is None:
            raise ImageError(f"/{path}: symlink escapes the image root (or loops); refused")
        return self.files.get(real)


def _under(path: str, roots: set[str]) -> bool:
    """Whether `path` equals or lies under any of `roots`."""
    if path in roots:
        return True
    pos = path.find("/")
    while pos >= 0:
        if path[:pos] in roots:
            return True
        pos = path.find("/", pos + 1)
    return False


def _delete(view: FileView, whiteouts: set[str], opaque: set[str], layer: int) -> None:
    """Apply one layer's whiteouts; a hashed file they remove is remembered as deleted."""
    if not whiteouts and not opaque:
        return
    before = set(view.digests)
    _delete_in(view, whiteouts, opaque)
    if len(before) != len(view.digests):
        for path in before.difference(view.digests):
            view.deleted[path] = layer


def _delete_in(view: FileView, whiteouts: set[str], opaque: set[str]) -> None:
    maps = (view.files, view.names, view.links, view.digests)
    if whiteouts:
        for d in maps:
            for key in [k for k in d if _under(k, whiteouts)]:
                del d[key]
    if "" in opaque:  # an opaque root: nothing of the lower layers remains
        for d in maps:
            d.clear()
    elif opaque:
        for d in maps:
            for key in [k for k in d if "/" in k and _under(k.rsplit("/", 1)[0], opaque)]:
                del d[key]


def walk(
    layers: Iterable[Layer],
    wants: Wants,
    on_layer: OnLayer | None = None,
    on_bytes: Callable[[int, int], None] | None = None,
    hash_files: bool | MemberDigester = False,
) -> FileView:
    """Stream every layer blob once; returns the final view of wanted files.

    on_layer runs after each listing; on_bytes(index, compressed_bytes_so_far) feeds a
    progress bar. hash_files: every regular file's body is also hashed as it streams past
    (`FileView.digests`), by the MemberDigester given (whose algorithms the caller may change
    between layers).
    """
    view = FileView()
    hasher = hash_files if isinstance(hash_files, MemberDigester) else (
        MemberDigester() if hash_files else None)
    kept: dict[str, tuple[Staged, LayerRead]] = {}  # blob digest -> what its read found
    try:
        for layer in layers:
            done = kept.pop(layer.key, None) if layer.key else None
            if done is None:
                staged, read = _read_blob(view, layer, wants, on_bytes, hasher)
            else:
                staged, read = _again(view, layer, done[0]), done[1]
            if layer.key and not layer.last:
                kept[layer.key] = (staged, read)
            _merge(view, staged, layer.index)
            if on_layer is not None:
                on_layer(layer.index, read, staged.files)
    finally:
        if hasher is not None:
            hasher.close()
    return view


def _again(view: FileView, layer: Layer, staged: Staged) -> Staged:
    """A blob's staged entries applied again as `layer`: its paths checked against the view
    as it is now, its file digests (taken with the algorithms of its first read)
    relabelled to this listing."""
    for path in staged.nested:  # the blob's own links were judged in order when it was read
        _check_through_links(view, layer.what, path, {})
    return staged._replace(hashed={p: d._replace(layer=layer.index)
                                   for p, d in staged.hashed.items()})


def _read_blob(
    view: FileView,
    layer: Layer,
    wants: Wants,
    on_bytes: Callable[[int, int], None] | None,
    hasher: MemberDigester | None,
) -> tuple[Staged, LayerRead]:
    """Stream one layer blob: what it stages, and what its read found."""
    raw = layer.open()
    stream = Decompressed(raw, layer.what)

    def chunk(stream: Decompressed = stream, idx: int = layer.index) -> bytes:
        data = stream.chunk()
        if on_bytes is not None:
            on_bytes(idx, stream.compressed)
        return data

    try:
        staged = _read_layer(layer, chunk, wants, view, hasher)
        if hasher is not None:
            hasher.settle(staged.hashed)
        stream.drain()
        # the verifying reader raises here if the blob's bytes do not match its digest
        drain = getattr(raw, "drain", None)
        if drain is not None:
            drain()
        read = LayerRead(stream.diff_id(), stream.compression, stream.compressed)
    finally:
        stream.close()  # after diff_id(): it stops the hashing threads
    return staged, read


def _merge(view: FileView, staged: Staged, idx: int) -> None:
    """Apply one layer's deletions, then its entries, to the view."""
    staged_files, staged_names, staged_links, regular, whiteouts, opaque, hashed, _ = staged
    _delete(view, whiteouts, opaque, idx)
    for path in staged_files:
        view.links.pop(path, None)
        view.names.pop(path, None)
    for path in staged_names:
        view.links.pop(path, None)
        view.files.pop(path, None)
    for path in staged_links:
        view.files.pop(path, None)
        view.names.pop(path, None)
        if view.digests.pop(path, None) is not None:
            view.deleted[path] = idx
    # a regular file written here also hides a lower symlink at that path
    for path in regular:
        view.links.pop(path, None)
        if path not in staged_files:
            view.files.pop(path, None)
        if path not in staged_names:
            view.names.pop(path, None)
    view.files.update((p, (idx, b)) for p, b in staged_files.items())
    view.retained = sum(len(b) for _, b in view.files.values())
    view.names.update((p, idx) for p in staged_names)
    view.links.update((p, (idx, t)) for p, t in staged_links.items())
    view.digests.update(hashed)
    if view.deleted:
        for path in hashed:
            view.deleted.pop(path, None)


def _check_name(view: FileView, what: str, entry: Entry, links: dict[str, str]) -> None:
    """Names tar extraction would treat specially: absolute and non-UTF-8 names are kept
    (made root-relative, shown escaped) with a warning; a member written through a symlink
    that leaves the image root is refused (extracted, it would land outside)."""
    path = entry.path
    if entry.absolute:
        view.warn(f"{what}: absolute member name /{path} (read as relative to the root)")
    if entry.undecodable:
        view.warn(f"{what}: member name {path!r} is not UTF-8 (shown with \\x escapes)")
    _check_through_links(view, what, path, links)


def _check_through_links(view: FileView, what: str, path: str, links: dict[str, str]) -> None:
    """A member at `path` written through a symlink (this layer's `links`, or the view's):
    refused if that leaves the image root, else warned about."""
    if not (links or view.links) or "/" not in path:
        return
    pos = path.find("/")
    while pos >= 0:
        prefix = path[:pos]
        target = links.get(prefix)
        if target is None and prefix in view.links:
            target = view.links[prefix][1]
        if target is not None:
            probe = FileView(links={**view.links, **{k: (0, v) for k, v in links.items()}})
            if probe.resolve(path) is None:
                raise ImageError(f"{what}: /{path} is written through the symlink /{prefix} "
                                 f"-> {target!r}, which leaves the image root; refused")
            view.warn(f"{what}: /{path} is written through the symlink /{prefix}")
            return
        pos = path.find("/", pos + 1)


def _read_layer(
    layer: Layer,
    chunk: Callable[[], bytes],
    wants: Wants,
    view: FileView,
    hasher: MemberDigester | None,
) -> Staged:
    """One layer's staged entries; the digest checks run when its stream is drained."""
    reader = _LayerReader(layer, wants, view, hasher)
    for entry, read_body in entries(chunk, layer.what):
        reader.add(entry, read_body)
    return reader.staged


@dataclass
class _LayerReader:
    """The staging of one layer's entries, in stream order (a later entry wins)."""

    layer: Layer
    wants: Wants
    view: FileView
    hasher: MemberDigester | None
    staged: Staged = field(default_factory=lambda: Staged({}, set(), {}, set(), set(), set(),
                                                          {}, []))
    staged_bytes: int = 0

    def add(self, entry, read_body: Callable[[], bytes]) -> None:
        path, what, st = entry.path, self.layer.what, self.staged
        if not path:
            return
        parent, _, base = path.rpartition("/")
        if base.startswith(WHITEOUT):
            self._whiteout(path, parent, base)
            return
        if entry.type in (CHARDEV, BLOCKDEV):
            raise ImageError(f"{what}: device file refused: /{path}")
        _check_name(self.view, what, entry, st.links)
        if "/" in path:
            st.nested.append(path)
        self._forget(path)
        if entry.type == SYMLINK:
            st.links[path] = entry.linkname
        elif entry.type == HARDLINK:
            self._hardlink(entry, path, self.wants(path))
        elif entry.type not in (DIRECTORY, FIFO):
            self._file(entry, path, self.wants(path), read_body)

    def _whiteout(self, path: str, parent: str, base: str) -> None:
        what = self.layer.what
        if base == OPAQUE:
            if not parent:
                self.view.warn(f"{what}: opaque whiteout at / hides every lower layer")
            self.staged.opaque.add(parent)
            return
        name = base[len(WHITEOUT) :]
        if not name or name in (".", ".."):
            raise ImageError(f"{what}: malformed whiteout {path!r}")
        self.staged.whiteouts.add(f"{parent}/{name}" if parent else name)

    def _forget(self, path: str) -> None:
        """Anything written here replaces what lower layers (or this one) had at `path`."""
        st = self.staged
        st.links.pop(path, None)
        self.staged_bytes -= len(st.files.pop(path, b""))
        st.names.discard(path)
        st.hashed.pop(path, None)

    def _hardlink(self, entry, path: str, want) -> None:
        st, what = self.staged, self.layer.what
        target = entry.linkname.lstrip("/")
        if target.startswith("./"):
            target = target[2:]
        if target not in st.regular:
            raise ImageError(
                f"{what}: hardlink /{path} points to a missing target {entry.linkname!r}"
            )
        st.regular.add(path)
        if target in st.hashed:
            st.hashed[path] = st.hashed[target]
        if want is NAME:
            st.names.add(path)
        elif want is not None:
            if target in st.files:
                st.files[path] = st.files[target]
            else:
                self.view.warn(f"{what}: /{path} is a hardlink to an unread file; skipped")

    def _file(self, entry, path: str, want, read_body: Callable[[], bytes]) -> None:
        st, what, idx = self.staged, self.layer.what, self.layer.index
        if path in st.regular:
            self.view.warn(f"{what}: /{path} appears twice in the layer; the later entry wins")
        st.regular.add(path)
        limit = member_limit(path) if want is not None and want is not NAME else 0
        if want is None or want is NAME or entry.size > limit:
            if want is NAME:
                st.names.add(path)
            elif want is not None:
                self.view.warn(f"{what}: /{path} is {entry.size} bytes, over the {limit}-byte "
                               "limit for its kind; skipped")
            if self.hasher is not None:
                st.hashed[path] = self.hasher.digest_body(idx, path, entry.size, read_body)
            return
        data = read_body()
        if self.hasher is not None:
            st.hashed[path] = self.hasher.digest_bytes(idx, path, data)
        st.files[path] = want(data) if callable(want) else data
        self.staged_bytes += len(st.files[path])
        if self.view.retained + self.staged_bytes > MAX_RETAINED:
            raise ImageError(f"{what}: package metadata over {MAX_RETAINED >> 20} MiB "
                             "in memory; refused")
