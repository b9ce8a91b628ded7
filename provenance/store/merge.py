"""Ship objects between stores: export a run's closure from one store, import into another.

A sweep runs each cell on some node into a store of its own, then merges the cell's objects
into the driver's store. Objects are content addressed, so merging is safe by construction:

1. every incoming object is re-hashed before anything is written; one mismatch refuses the
   whole batch (nothing half-imported);
2. an object already present is left alone (identical bytes dedupe; nothing is overwritten);
3. index rows are added for what the objects say (manifests, runs, comparisons, trees), and a
   run's row moves only forward (a `started` record never replaces a `complete` one).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field

from provenance.model import Manifest, ManifestError
from provenance.store import index as idx
from provenance.store.objects import CorruptObject, split_digest
from provenance.store.records import (
    COMPARISON_KIND,
    RUN_KIND,
    TREE_KIND,
    decode_json_object,
    index_row,
    now_iso,
    record_rank,
    referenced_objects,
)
from provenance.store.states import STATE_RANK


@dataclass
class ImportResult:
    added: int = 0  # objects written
    present: int = 0  # objects already there (deduplicated)
    bytes_added: int = 0
    runs: list[str] = field(default_factory=list)  # run ids whose index row was added/advanced


def run_closure(store, run_id: str) -> list[str]:
    """Every object a run needs: its record chain and all they reference (trees' stored
    entries included), in a stable order."""
    info = store.get_run(run_id)
    seen: list[str] = []
    todo = [info.record_digest]
    while todo:
        d = todo.pop()
        if d in seen or not store.objects.has(d):
            continue
        seen.append(d)
        doc = decode_json_object(store.objects.get_bytes(d)) or {}
        if doc.get("kind") == RUN_KIND:
            todo.extend(ref for ref, _kind in referenced_objects(doc))
        elif doc.get("kind") == TREE_KIND:
            for entry in (doc.get("entries") or {}).values():
                if isinstance(entry, dict) and entry.get("stored") and entry.get("digest"):
                    todo.append(entry["digest"])
    return seen


def export_objects(store, digests: Iterable[str]) -> list[tuple[str, bytes]]:
    """(digest, bytes) of each object, verified on read."""
    return [(d, store.objects.get_bytes(d)) for d in dict.fromkeys(digests)]


def _kind_of(doc: dict | None) -> str:
    if not doc:
        return "blob"
    return {RUN_KIND: "run", COMPARISON_KIND: "comparison", TREE_KIND: "tree",
            "prov.manifest": "manifest"}.get(str(doc.get("kind")), "blob")


def import_objects(store, items: Iterable[tuple[str, bytes]]) -> ImportResult:
    """Merge objects into `store` (see the module docstring for the rules)."""
    batch = list(items)
    for digest, data in batch:  # 1. verify all before writing any
        if hashlib.sha256(data).hexdigest() != split_digest(digest):
            raise CorruptObject(f"incoming object {digest}: content does not match its name")
    store._ensure_layout()
    res = ImportResult()
    docs: dict[str, dict | None] = {}
    for digest, data in batch:  # 2. write what is missing
        digest = f"sha256:{split_digest(digest)}"
        if store.objects.has(digest):
            res.present += 1
        else:
            store.objects.put_bytes(data)
            res.added += 1
            res.bytes_added += len(data)
        docs[digest] = decode_json_object(data)
    kinds = {d: _kind_of(doc) for d, doc in docs.items()}
    for doc in docs.values():
        if _kind_of(doc) == "run":
            for ref, kind in referenced_objects(doc):
                if kinds.get(ref) == "blob":
                    kinds[ref] = kind
    newest: dict[str, tuple[str, dict]] = {}
    for d, doc in docs.items():
        if kinds[d] == "run" and isinstance(doc.get("run_id"), str):
            held = newest.get(doc["run_id"])
            if held is None or record_rank(doc) > record_rank(held[1]):
                newest[doc["run_id"]] = (d, doc)
    sizes = {f"sha256:{split_digest(d)}": len(b) for d, b in batch}
    with idx.transaction(store.db) as conn:  # 3. index rows
        for d, kind in kinds.items():
            idx.add_object(conn, d, kind, sizes[d])
            doc = docs[d]
            if kind == "manifest":
                try:
                    m = Manifest.from_document(doc, origin=d)
                except ManifestError:
                    continue
                host = doc.get("host")
                created = host.get("timestamp") if isinstance(host, dict) else None
                conn.execute("INSERT OR IGNORE INTO manifests (object, manifest_digest, "
                             "created_at) VALUES (?, ?, ?)", (d, m.digest(), created or now_iso()))
            elif kind == "comparison":
                conn.execute("INSERT OR IGNORE INTO comparisons (object, a, b, created_at) "
                             "VALUES (?, ?, ?, ?)",
                             (d, str(doc.get("a", {}).get("ref", "")),
                              str(doc.get("b", {}).get("ref", "")),
                              str(doc.get("created_at", ""))))
        for rid, (d, doc) in newest.items():
            row = conn.execute("SELECT state FROM runs WHERE run_id = ?", (rid,)).fetchone()
            if row is not None and STATE_RANK.get(row["state"], -1) >= \
                    STATE_RANK.get(doc.get("state", ""), -1):
                continue
            idx.upsert_run(conn, index_row(doc, d))
            res.runs.append(rid)
    return res
