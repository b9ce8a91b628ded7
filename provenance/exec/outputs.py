"""Hash a run's declared outputs and ingest its PROV_RUN_DIR into the store.

Outputs are hashed, not copied (they may be model weights): a file gets its sha256 and
size; a directory gets a tree object (every file's relative path, digest and size) stored
in the store, whose digest names the directory. Run-dir files are copied into the store.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from provenance.exec.facts import FACTS_FILE
from provenance.model import ProvError, canonical_json
from provenance.model.digests import file_sha256_size
from provenance.model.inputs import read_json
from provenance.model.redact import KnownSecrets, redact_tree, store_key
from provenance.store.records import TREE_KIND, encode

if TYPE_CHECKING:  # annotations only (this module uses postponed annotations)
    from provenance.store.record_types import OutputEntry, StoredFile

_CHUNK = 1 << 20


def _walk(root: Path) -> list[Path]:
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            found.append(Path(dirpath) / name)
        # symlinked directories are recorded as links, not followed
        for name in list(dirnames):
            if (Path(dirpath) / name).is_symlink():
                found.append(Path(dirpath) / name)
    return sorted(found)


def hash_output(path: Path, store) -> OutputEntry:
    """The record entry for one declared output."""
    try:
        if path.is_symlink() and not path.exists():
            return {"type": "broken-link", "target": os.readlink(path)}
        if path.is_file():
            digest, size = file_sha256_size(path)
            return {"type": "file", "digest": digest, "size": size}
        if path.is_dir():
            entries: dict[str, Any] = {}
            total = 0
            for f in _walk(path):
                rel = f.relative_to(path).as_posix()
                if f.is_symlink():
                    entries[rel] = {"link": os.readlink(f)}
                    continue
                digest, size = file_sha256_size(f)
                entries[rel] = {"digest": digest, "size": size}
                total += size
            tree = store.put_bytes(encode({"kind": TREE_KIND, "entries": entries}), "tree")
            return {"type": "dir", "digest": tree, "files": len(entries), "size": total}
    except OSError as exc:
        return {"type": "unreadable", "error": exc.strerror or str(exc)}
    return {"type": "missing"}


def hash_outputs(workdir: Path, outputs, store,
                 warnings: list[str]) -> dict[str, OutputEntry]:
    """Record entries for every declared output (relative paths are under `workdir`)."""
    outs: dict[str, OutputEntry] = {}
    for p in outputs:
        outs[str(p)] = hash_output(workdir / Path(p), store)
        if outs[str(p)]["type"] == "missing":
            warnings.append(f"declared output {p} does not exist")
    return outs


def _put_facts(path: Path, store, known: KnownSecrets | None) -> tuple[str, int]:
    """facts.json as stored: its redacted form (what joined the manifest), never the raw file."""
    try:
        doc = read_json(path, "record")
    except ProvError:
        doc = {"unreadable": "facts.json was not a readable JSON document"}
    data = canonical_json(redact_tree(doc, store_key(store.root), known=known))
    return store.put_object(data), len(data)


def _put_hidden(path: Path, store, known: KnownSecrets | None) -> tuple[str, int]:
    """A run-dir file as stored: the values the run's redaction hid (its KnownSecrets)
    replaced wherever they occur, in text or binary alike, streamed in chunks that overlap
    by the longest value (a file holding none is stored byte for byte)."""
    if not known:
        return store.put_file(path)
    key, overlap = store_key(store.root), known.longest()
    writer, tail = store.object_writer("rundir-"), b""
    try:
        with open(path, "rb") as fh:
            while chunk := fh.read(_CHUNK):
                buf = tail + chunk
                spans = known.spans(buf)
                cut = len(buf) - overlap  # an occurrence may still grow past this point
                cut = min([cut, *(s for s, e in spans if e > cut)])
                writer.write(_marked(buf[:max(cut, 0)], spans, key, known))
                tail = buf[max(cut, 0):]
        writer.write(_marked(tail, known.spans(tail), key, known))
        return writer.close(), writer.size
    except BaseException:
        writer.abort()
        raise


def _marked(data: bytes, spans: list[tuple[int, int]], key: bytes,
            known: KnownSecrets) -> bytes:
    out, pos = [], 0
    for start, end in spans:
        if end > len(data):
            break
        out += [data[pos:start], known.hide_in(
            data[start:end].decode("utf-8", "surrogateescape"), key).encode(
                "utf-8", "surrogateescape")]
        pos = end
    return b"".join(out) + data[pos:]


def ingest_run_dir(run_dir: Path, store, skip: tuple[str, ...] = (),
                   known: KnownSecrets | None = None) -> dict[str, StoredFile]:
    """Copy every file under PROV_RUN_DIR into the store: relative path -> digest, size
    (but those under the top-level directories in `skip`); values the run's redaction hid
    (`known`) are hidden in them."""
    out: dict[str, StoredFile] = {}
    if not run_dir.is_dir():
        return out
    for f in _walk(run_dir):
        rel = f.relative_to(run_dir).as_posix()
        if rel.split("/", 1)[0] in skip:
            continue
        if f.is_symlink():
            out[rel] = {"link": os.readlink(f)}
            continue
        try:
            digest, size = (_put_facts(f, store, known) if rel == FACTS_FILE
                            else _put_hidden(f, store, known))
        except OSError as exc:
            out[rel] = {"error": exc.strerror or str(exc)}
            continue
        out[rel] = {"digest": digest, "size": size}
    return out
