"""`prov store reindex` and `prov store fsck`: the index from the objects, and a full check.

1. Every object is re-hashed; one whose bytes do not match its name is *corrupt*.
2. Every JSON object is classified by its `kind` (manifest, run record, comparison).
3. reindex: the rows are rebuilt in one transaction from step 2 alone.
   fsck: the index is compared with step 2 and every reference is followed; a referenced
   object that is absent is *missing*; an object nothing references is *orphaned* (what a
   killed run leaves behind: harmless); index rows that lag the objects are *stale*.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
from dataclasses import dataclass, field
from typing import Any

from provenance.model import Manifest, ManifestError
from provenance.store import index as idx
from provenance.store.gc import leftovers
from provenance.store.records import (
    COMPARISON_KIND,
    RUN_KIND,
    TREE_KIND,
    decode_json_object,
    effective_state,
    index_row,
    record_rank,
    referenced_objects,
)

# JSON documents larger than this are logs or data, never records: not parsed.
_MAX_DOC = 64 << 20


@dataclass
class Scan:
    sizes: dict[str, int] = field(default_factory=dict)
    corrupt: list[str] = field(default_factory=list)
    stray: list[str] = field(default_factory=list)
    manifests: dict[str, tuple[str, str]] = field(default_factory=dict)  # obj -> (digest, time)
    runs: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)  # newest record
    records: dict[str, dict[str, Any]] = field(default_factory=dict)  # every run record
    comparisons: dict[str, dict[str, Any]] = field(default_factory=dict)
    trees: dict[str, dict[str, Any]] = field(default_factory=dict)


def _hash_file(path) -> tuple[str, bytes | None, int]:
    """(hex digest, content if small enough to be a document, size)."""
    h = hashlib.sha256()
    size = 0
    head = b""
    keep: list[bytes] | None = []
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            if size == 0:
                head = chunk[:1]
            h.update(chunk)
            size += len(chunk)
            if keep is not None:
                keep.append(chunk)
                if size > _MAX_DOC or head != b"{":
                    keep = None
    return h.hexdigest(), (b"".join(keep) if keep is not None else None), size


def _mtime_iso(path) -> str:
    ts = path.stat().st_mtime
    return dt.datetime.fromtimestamp(ts, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def scan(store) -> Scan:
    out = Scan()
    for digest, path in store.objects.iter_digests():
        if not digest:
            out.stray.append(str(path))
            continue
        try:
            hexdigest, data, size = _hash_file(path)
        except OSError:
            out.corrupt.append(digest)
            continue
        if "sha256:" + hexdigest != digest:
            out.corrupt.append(digest)
            continue
        out.sizes[digest] = size
        doc = decode_json_object(data) if data is not None else None
        if doc is None:
            continue
        kind = doc.get("kind")
        if kind == RUN_KIND and isinstance(doc.get("run_id"), str):
            out.records[digest] = doc
            rid = doc["run_id"]
            held = out.runs.get(rid)
            if held is None or record_rank(doc) > record_rank(held[1]):
                out.runs[rid] = (digest, doc)
        elif kind == COMPARISON_KIND:
            out.comparisons[digest] = doc
        elif kind == TREE_KIND:
            out.trees[digest] = doc
        elif kind == "prov.manifest":
            try:
                m = Manifest.from_document(doc, origin=digest)
            except ManifestError:
                continue
            created = (
                doc.get("host", {}).get("timestamp") if isinstance(doc.get("host"), dict) else None
            )
            out.manifests[digest] = (m.digest(), created or _mtime_iso(path))
    return out


def _kinds(s: Scan) -> dict[str, str]:
    kinds = {d: "blob" for d in s.sizes}
    for d in s.manifests:
        kinds[d] = "manifest"
    for d in s.comparisons:
        kinds[d] = "comparison"
    for d in s.trees:
        kinds[d] = "tree"
    for d, rec in s.records.items():
        kinds[d] = "run"
        for ref, kind in referenced_objects(rec):
            if kinds.get(ref) == "blob":
                kinds[ref] = kind
    return kinds


@dataclass
class ReindexResult:
    runs: int
    manifests: int
    comparisons: int
    objects: int
    corrupt: list[str]
    moved_aside: str | None = None  # where a damaged index.sqlite was moved


def _index_healthy(store) -> bool:
    """Whether index.sqlite opens and passes SQLite's quick_check (a full read of it)."""
    from provenance.store.store import IndexUnreadable

    try:
        rows = store.db.execute("PRAGMA quick_check").fetchall()
    except IndexUnreadable:
        return False
    return [tuple(r) for r in rows] == [("ok",)]


def _move_index_aside(store) -> str:
    """Rename a damaged index.sqlite (and its -wal/-shm) to index.sqlite.corrupt-<time>."""
    store.close()
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    base = store.root / "index.sqlite"
    aside = base.with_name(f"index.sqlite.corrupt-{stamp}")
    n = 1
    while aside.exists():  # a second reindex within the same second keeps the first file
        aside, n = base.with_name(f"index.sqlite.corrupt-{stamp}.{n}"), n + 1
    for suffix in ("", "-wal", "-shm"):
        src = base.with_name(base.name + suffix)
        if src.exists():
            os.replace(src, aside.with_name(aside.name + suffix))
    return str(aside)


def reindex(store) -> ReindexResult:
    """Rebuild every row from the objects; a damaged index file is moved aside first."""
    moved = None if _index_healthy(store) else _move_index_aside(store)
    s = scan(store)
    kinds = _kinds(s)
    with idx.transaction(store.db) as conn:
        for table in ("objects", "manifests", "runs", "comparisons"):
            conn.execute(f"DELETE FROM {table}")
        for d, size in s.sizes.items():
            idx.add_object(conn, d, kinds[d], size)
        for d, (mdigest, created) in s.manifests.items():
            conn.execute(
                "INSERT INTO manifests (object, manifest_digest, created_at) VALUES (?, ?, ?)",
                (d, mdigest, created),
            )
        for digest, rec in s.runs.values():
            idx.upsert_run(conn, index_row(rec, digest))
        for d, doc in s.comparisons.items():
            conn.execute(
                "INSERT INTO comparisons (object, a, b, created_at) VALUES (?, ?, ?, ?)",
                (
                    d,
                    str(doc.get("a", {}).get("ref", "")),
                    str(doc.get("b", {}).get("ref", "")),
                    str(doc.get("created_at", "")),
                ),
            )
    return ReindexResult(len(s.runs), len(s.manifests), len(s.comparisons), len(s.sizes),
                         s.corrupt, moved)


@dataclass
class FsckResult:
    objects: int = 0
    corrupt: list[str] = field(default_factory=list)
    missing: list[tuple[str, str]] = field(default_factory=list)  # (digest, referred from)
    stray: list[str] = field(default_factory=list)
    orphaned: list[str] = field(default_factory=list)
    unindexed_runs: list[str] = field(default_factory=list)
    stale_runs: list[str] = field(default_factory=list)
    index_problems: list[str] = field(default_factory=list)
    temp_files: int = 0
    runs: dict[str, int] = field(default_factory=dict)
    leftovers: Any = None  # gc.Leftovers: temp files and run directories killed runs left

    @property
    def ok(self) -> bool:
        """Corruption or a dangling reference fails fsck; what reindex repairs does not."""
        return not (self.corrupt or self.missing or self.stray or self.index_problems)

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "objects": self.objects,
            "corrupt": self.corrupt,
            "missing": [{"digest": d, "referenced_by": r} for d, r in self.missing],
            "stray": self.stray,
            "orphaned": self.orphaned,
            "unindexed_runs": self.unindexed_runs,
            "stale_runs": self.stale_runs,
            "index_problems": self.index_problems,
            "temp_files": self.temp_files,
            "runs": self.runs,
            "leftovers": self.leftovers.to_json() if self.leftovers else None,
        }


class _Refs:
    """Which objects something refers to, and which of those are missing."""

    def __init__(self, present: set[str], r: FsckResult) -> None:
        self.present = present
        self.r = r
        self.referenced: set[str] = set()

    def follow(self, digest: str, origin: str) -> None:
        self.referenced.add(digest)
        if digest not in self.present:
            self.r.missing.append((digest, origin))


def _follow_objects(s: Scan, refs: _Refs) -> None:
    """Every reference the objects hold: run records, trees, comparisons."""
    for d, rec in s.records.items():
        for ref, _kind in referenced_objects(rec):
            refs.follow(ref, f"run {rec['run_id']} ({d})")
    for d, tree in s.trees.items():
        for entry in (tree.get("entries") or {}).values():
            if isinstance(entry, dict) and entry.get("digest") and entry.get("stored"):
                refs.follow(entry["digest"], f"tree {d}")
    for d, doc in s.comparisons.items():
        for side in ("a", "b"):
            ref = doc.get(side, {})
            for key in ("record", "manifest"):
                if isinstance(ref.get(key), str) and ref[key].startswith("sha256:"):
                    refs.follow(ref[key], f"comparison {d}")


def _check_index_runs(store, s: Scan, refs: _Refs, r: FsckResult) -> None:
    """The index's runs against the newest record of each run among the objects."""
    conn = store.db
    for row in conn.execute("SELECT * FROM runs"):
        rid, rec_digest = row["run_id"], row["record"]
        refs.referenced.add(rec_digest)
        if rec_digest not in refs.present:
            r.missing.append((rec_digest, f"index row of run {rid}"))
            continue
        newest = s.runs.get(rid)
        if newest is None:
            r.index_problems.append(f"run {rid}: index points at a record of another run")
        elif newest[0] != rec_digest:
            r.stale_runs.append(rid)
        state = effective_state(
            newest[1]["state"] if newest else row["state"],
            row["sup_host"],
            row["sup_pid"],
            row["sup_boot"],
            row["sup_start"],
        )
        r.runs[state] = r.runs.get(state, 0) + 1
    indexed = {row["run_id"] for row in conn.execute("SELECT run_id FROM runs")}
    for rid, (_digest, rec) in s.runs.items():
        refs.referenced.add(_digest)
        if rid not in indexed:
            r.unindexed_runs.append(rid)
            sup = rec.get("supervisor", {})
            state = effective_state(
                rec["state"],
                sup.get("host"),
                sup.get("pid"),
                sup.get("boot_id"),
                sup.get("start_ticks"),
            )
            r.runs[state] = r.runs.get(state, 0) + 1


def fsck(store) -> FsckResult:
    s = scan(store)
    r = FsckResult(objects=len(s.sizes) + len(s.corrupt), corrupt=s.corrupt, stray=s.stray)
    refs = _Refs(set(s.sizes) | set(s.corrupt), r)
    _follow_objects(s, refs)
    _check_index_runs(store, s, refs, r)
    for table in ("manifests", "comparisons"):
        for row in store.db.execute(f"SELECT object FROM {table}"):
            refs.follow(row["object"], f"index of {table}")
    referenced = refs.referenced | set(s.records) | set(s.comparisons)
    r.orphaned = sorted(refs.present - referenced - set(s.corrupt))
    if store.objects.tmp.is_dir():
        r.temp_files = sum(1 for _ in store.objects.tmp.iterdir())
    r.leftovers = leftovers(store, grace_s=0)
    return r


def dumps(result: Any) -> str:
    return json.dumps(result.to_json(), indent=2, sort_keys=True)
