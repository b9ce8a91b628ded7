"""The sweep driver: plan, skip finished cells, run the rest, merge, gate, record.

1. Tokenise the text once; plan the cells (their keys).
2. Resume: a cell whose key has a finished `prov.sweep.cell` object in this store, whose runs
   (the invariance probes' included) are complete here, is skipped — with the local executor
   only if this machine's snapshot has the manifest digest the cell ran with (otherwise the
   environment changed: run again).
3. Run the rest (local or Ray); merge each cell's objects into the store as it comes home,
   store its cell object, append the journal.
4. Gate every cell against the reference cell; compare scores of the cells that pass.
5. Store the sweep record: spec digest, cells, node each ran on, run ids, the matrix.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from provenance.model.policy import Policy, overall
from provenance.model.redact import store_key
from runners.sweep import journal
from runners.sweep.cell import payload
from runners.sweep.matrix import compare_scores, gate_cell, load_scores, vary_for
from runners.sweep.plan import Cell, plan
from runners.sweep.spec import SweepSpec

SWEEP_KIND = "prov.sweep"
CELL_KIND = "prov.sweep.cell"
Event = Callable[[str, str, dict[str, Any]], None]


@dataclass
class SweepOutcome:
    record: dict[str, Any]
    digest: str
    cells: list[dict[str, Any]] = field(default_factory=list)

    @property
    def failed(self) -> list[dict[str, Any]]:
        return [c for c in self.cells if c.get("state") == "failed"]

    @property
    def unfinished(self) -> list[dict[str, Any]]:
        """Cells not run for want of time (a spec's [[skip]] cells are not unfinished)."""
        return [c for c in self.cells if c.get("state") == "not run" and not c.get("declared")]

    @property
    def flagged(self) -> list[dict[str, Any]]:
        return [c for c in self.cells if (c.get("gate") or {}).get("gate") == "flagged"]


def _current_snapshot_digest() -> str:
    from provenance.exec import environment_digest

    return environment_digest(sys.executable)


def finished_cells(store, cells: list[Cell], local: bool) -> dict[str, dict[str, Any]]:
    """Cell key -> its stored cell document, for cells that need not run again."""
    keys = {c.key for c in cells}
    here = _current_snapshot_digest() if local else None
    done: dict[str, dict[str, Any]] = {}
    for e in reversed(journal.entries(store)):  # the newest finished object wins
        if e["key"] not in keys or e["key"] in done:
            continue
        try:
            doc = store.get_json(e["object"])
            probed = (doc.get("invariance") or {}).get("run_id")
            states = [store.get_run(r).state for r in doc["runs"] + ([probed] if probed else [])]
        except Exception:  # noqa: BLE001 - a lost or unreadable cell object: run it again
            continue
        if doc.get("kind") != CELL_KIND or doc.get("key") != e["key"] or \
                any(s != "complete" for s in states):
            continue
        if here is not None and doc.get("executor") == "local" and \
                doc.get("snapshot_digest") != here:
            continue
        done[e["key"]] = doc
    return done


def run_sweep(spec: SweepSpec, store, executor, on_event: Event,
              resume: bool = True, policy: Policy | None = None) -> SweepOutcome:
    """Plan, reuse finished cells, run the rest, gate every cell against the reference,
    compare the comparable ones, and store the sweep record."""
    from provenance.store import encode
    from runners.prepare import prepare

    t0 = time.time()
    prep = prepare(spec.model, spec.text, spec.max_tokens)
    digests = {"model_digest": prep.model_digest, "tokenizer_digest": prep.tokenizer_digest,
               "text_digest": prep.text_digest, "tokens": int(len(prep.ids)),
               "block": spec.block}
    cells = plan(spec, digests)
    done = finished_cells(store, cells, executor.name == "local") if resume else {}
    results: dict[str, dict[str, Any]] = {}
    for c in cells:
        on_event(c.cell_id, "pending", {"label": c.label})
    for c in cells:
        if c.key in done:
            results[c.cell_id] = {**done[c.key], "reused": True}
            on_event(c.cell_id, "skipped", {"node": done[c.key].get("node", {})})
    spec_obj = store.put_bytes(spec.path.read_bytes() if spec.path else b"", "sweep.spec")
    for c in cells:
        if c.skip and c.cell_id not in results:
            results[c.cell_id] = {"state": "not run", "reason": c.skip, "declared": True}
            on_event(c.cell_id, "not run", {"error": c.skip})
    todo = [c for c in cells if c.cell_id not in results]
    results.update(_run_cells(spec, store, executor, on_event, todo, prep))
    # 4. the gate across nodes, then figures for the comparable cells
    vary = vary_for(list(spec.axes), spec.vary)
    rows = _gate_rows(store, cells, results, vary, prep.ids)
    ref = next(c for c in cells if c.is_reference)
    record = _sweep_record(spec, executor, spec_obj, ref.label, vary, prep, rows, t0)
    if policy is not None:
        record["policy"] = judge_cells(rows, policy)
    digest = store.put_bytes(encode(record), "sweep")
    return SweepOutcome(record, digest, rows)


def _run_cells(spec: SweepSpec, store, executor, on_event: Event, todo: list[Cell],
               prep) -> dict[str, dict[str, Any]]:
    """Run the cells not reused; each finished one is stored and journalled at once."""
    by_id = {c.cell_id: c for c in todo}
    cwd = Path.cwd()
    key = store_key(store.root)
    payloads = [payload(c, spec, prep, cwd, key) for c in todo]
    resources = {c.cell_id: {"num_cpus": spec.num_cpus, "num_gpus": spec.num_gpus,
                             "resources": c.resources} for c in todo}
    results: dict[str, dict[str, Any]] = {}
    for p, out in executor.run(payloads, spec.retries, on_event, resources=resources):
        c = by_id[p["cell_id"]]
        if "not_run" in out:
            results[c.cell_id] = {"state": "not run", "reason": out["not_run"]}
            on_event(c.cell_id, "not run", {"error": out["not_run"]})
            continue
        if "error" in out:
            results[c.cell_id] = {"state": "failed", "error": out["error"],
                                  "failures": out.get("failures", []),
                                  "attempts": out.get("attempts")}
            on_event(c.cell_id, "failed", {"error": out["error"]})
            continue
        results[c.cell_id] = doc = _store_cell(spec, store, executor, c, out)
        on_event(c.cell_id, "done", {"node": doc["node"], "seconds": doc["seconds"],
                                     "attempts": doc["attempts"],
                                     "invariance": (doc.get("invariance") or {}).get("verdict")})
    return results


def _store_cell(spec: SweepSpec, store, executor, c: Cell, out: dict[str, Any]) -> dict:
    """Merge the objects a remote cell shipped, store the cell document, journal it."""
    from provenance.store import encode, import_objects, now_iso

    shipped = None
    if "objects" in out:
        t_merge = time.perf_counter()
        items = out.pop("objects")
        res = import_objects(store, items)
        shipped = {"objects": len(items), "bytes": sum(len(b) for _, b in items),
                   "added": res.added, "deduplicated": res.present,
                   "bytes_added": res.bytes_added,
                   "merge_seconds": round(time.perf_counter() - t_merge, 4)}
    doc = {"kind": CELL_KIND, "schema_version": 1, "sweep": spec.name,
           "spec_digest": spec.digest, "key": c.key, "label": c.label, "values": c.values,
           "engine": c.config.to_json(), "executor": executor.name,
           "created_at": now_iso(), "shipped": shipped, **out}
    obj = store.put_bytes(encode(doc), "sweep.cell")
    journal.append(store, {"key": c.key, "object": obj,
                           "manifest_digest": doc["manifest_digest"]})
    return {**doc, "cell_object": obj, "reused": False}


def _gate_rows(store, cells: list[Cell], results: dict[str, dict[str, Any]], vary: list[str],
               ids) -> list[dict[str, Any]]:
    """One row per cell: its outcome, its gate against the reference, and its figures."""
    ref = next(c for c in cells if c.is_reference)
    ref_res = results.get(ref.cell_id, {})
    ref_scores = load_scores(store, ref_res["scores"]) if "scores" in ref_res else None
    rows = []
    for c in cells:
        r = results[c.cell_id]
        row: dict[str, Any] = {
            "label": c.label, "values": c.values, "key": c.key, "reference": c.is_reference,
            "state": r.get("state", "complete"), "reused": r.get("reused", False),
            "node": r.get("node"), "runs": r.get("runs", []), "records": r.get("records", []),
            "manifest_digest": r.get("manifest_digest"), "attempts": r.get("attempts"),
            "failures": r.get("failures", []), "cell_object": r.get("cell_object")
            or _object_of(store, c.key), "verdict": r.get("verdict"),
            "error": r.get("error"), "shipped": r.get("shipped"), "seconds": r.get("seconds"),
            "reason": r.get("reason"), "declared": r.get("declared", False),
            "scores": r.get("scores"),
            "runtime": r.get("runtime"), "invariance": r.get("invariance"),
        }
        if row["state"] == "complete" and ref_scores is not None and not c.is_reference:
            row["gate"] = gate_cell(store, ref_res["runs"][0], r["runs"][0], vary)
            if row["gate"]["gate"] == "passed":
                row["summary"] = compare_scores(ref_scores, load_scores(store, r["scores"]), ids)
        elif c.is_reference and row["state"] == "complete":
            row["gate"] = {"gate": "reference"}
        rows.append(row)
    return rows


def _sweep_record(spec: SweepSpec, executor, spec_obj: str, reference: str, vary: list[str],
                  prep, rows: list[dict[str, Any]], t0: float) -> dict[str, Any]:
    from provenance.store import now_iso

    return {"kind": SWEEP_KIND, "schema_version": 1, "name": spec.name,
            "spec_digest": spec.digest, "spec_object": spec_obj,
            "spec_path": str(spec.path) if spec.path else None,
            "executor": executor.name, "ray_address": getattr(executor, "address", None),
            "axes": spec.axes, "reference": reference, "vary": vary,
            "model_digest": prep.model_digest, "text_digest": prep.text_digest,
            "tokens": int(len(prep.ids)), "repeats": spec.repeats,
            "created_at": now_iso(), "seconds": round(time.time() - t0, 3),
            "driver": {"pid": os.getpid(), "host": os.uname().nodename}, "cells": rows}


def judge_cells(rows: list[dict[str, Any]], policy: Policy) -> dict[str, Any]:
    """Each cell but the reference and the spec's [[skip]] cells judged on its row (as
    `prov sweep --json` prints it): a flagged cell is NOT_COMPARABLE, a failed or unstarted
    one NOT_EVALUATED (its figures are missing); the sweep's verdict is the worst of them."""
    verdicts = []
    for row in rows:
        if row["reference"] or row["declared"]:
            continue
        if (row.get("gate") or {}).get("gate") == "flagged":
            row["policy"] = policy.not_comparable("the gate flagged this cell")
        else:
            row["policy"] = policy.evaluate(row)
        verdicts.append(row["policy"]["verdict"])
    return {"path": policy.path, "sha256": policy.sha256, "verdict": overall(verdicts),
            "cells": len(verdicts)}


def _object_of(store, key: str) -> str | None:
    found = [e["object"] for e in journal.entries(store) if e["key"] == key]
    return found[-1] if found else None
