"""What a report is about: resolve RUN | COMPARISON | SWEEP and load it, without writing.

Targets, tried in order:
- a `prov-result/1` directory (or its result.json): a divergence result is a comparison
  report, a repeatability result a run report;
- a sweep record: a JSON file (or a directory holding sweep.json) whose `format` starts with
  `prov-sweep` (the shape is documented in docs/reference/formats.md);
- in the store: a comparison record (object digest or unique prefix) or a run id (prefix).
The store is only read: a target that names nothing gives one clear error.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from provenance.model.errors import ProvError


@dataclass
class Loaded:
    kind: str  # diverge | repeat | comparison | run | sweep
    target: str
    doc: dict[str, Any]
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    path: Path | None = None
    store: Any = None  # an existing provenance.store.Store, when one was found
    comparison: dict[str, Any] | None = None  # the stored prov.comparison record
    records: dict[str, dict] = field(default_factory=dict)  # run id -> run record


def existing_store(path: Path | str | None):
    """Open a store only where one exists: a report never creates one."""
    from provenance.store import open_store
    from provenance.store.store import default_store_path

    root = Path(path).expanduser() if path else default_store_path()
    if (root / "objects").is_dir():
        return open_store(root)
    return None


def _stores(explicit: str | None, near: Path | None) -> list:
    cands: list[Any] = [explicit, os.environ.get("PROV_STORE"), None]
    if near is not None:  # `prov demo` keeps its store beside its results
        cands += [near.parent / "store", near.parent.parent / "store"]
    out, seen = [], set()
    for c in cands:
        try:
            st = existing_store(c)
        except ProvError:
            st = None
        if st is not None and str(st.root.resolve()) not in seen:
            seen.add(str(st.root.resolve()))
            out.append(st)
    if explicit and not out:
        raise ProvError(f"{explicit}: no store there")
    return out


def _find_comparison(stores: list, digest: str | None):
    for st in stores:
        try:
            doc = st.get_json(digest) if digest else None
        except (ProvError, OSError):
            continue
        if doc and doc.get("kind") == "prov.comparison":
            return st, doc
    return (stores[0] if stores else None), None


def _records(store, run_ids) -> dict[str, dict]:
    out = {}
    for rid in run_ids:
        if not rid or store is None:
            continue
        with contextlib.suppress(ProvError):
            out[rid] = store.get_run(rid).record.to_doc()
    return out


def _load_result(path: Path, target: str, store_path: str | None) -> Loaded:
    from runners import api

    doc, arrays = api.read_result(path)
    stores = _stores(store_path, path.resolve())
    kind = doc["kind"]
    # a repeatability result gates each repeat against run 0: the first pair's record
    gates = doc.get("comparisons") if kind == "repeat" else [doc.get("comparison")]
    digest = next((g["comparison_record"] for g in gates or []
                   if isinstance(g, dict) and g.get("comparison_record")), None)
    store, comparison = _find_comparison(stores, digest)
    runs = doc.get("runs")
    ids = list(runs.values()) if isinstance(runs, dict) else [r.get("run_id") for r in runs or []]
    return Loaded(kind, target, doc, arrays, path, store, comparison, _records(store, ids))


def _sweep_file(path: Path) -> Path | None:
    cand = path / "sweep.json" if path.is_dir() else path
    if cand.is_file() and cand.suffix == ".json":
        from provenance.model.inputs import InputError, read_json

        try:
            head = read_json(cand, "json")
        except InputError:
            return None
        if isinstance(head, dict) and (str(head.get("format", "")).startswith("prov-sweep")
                                       or head.get("kind") == "prov.sweep"):
            return cand
    return None


def _sweep_doc(doc: Any, where: Any) -> dict[str, Any]:
    from provenance.report.sweep import from_store_record, validate_sweep

    if isinstance(doc, dict) and doc.get("kind") == "prov.sweep":
        doc = from_store_record(doc)
    return validate_sweep(doc, where)


def load(target: str, store_path: str | None = None) -> Loaded:
    path = Path(target)
    if path.exists():
        if path.is_file() and path.name == "result.json":
            path = path.parent
        if (path / "result.json").is_file():
            return _load_result(path, target, store_path)
        sweep = _sweep_file(path)
        if sweep is not None:

            return Loaded("sweep", target, _sweep_doc(_read_json(sweep), sweep),
                          path=sweep)
        raise ProvError(f"{target}: neither a prov-result/1 directory nor a sweep record")
    stores = _stores(store_path, None)
    if not stores:
        raise ProvError(f"{target}: no such file, and no store to look it up in")
    store = stores[0]
    bare = target.removeprefix("sha256:")
    if len(bare) >= 4 and not set(bare.lower()) - set("0123456789abcdef"):
        try:
            digest = store.resolve_object(target)
            doc = store.get_json(digest)
        except ProvError:
            doc = None
        if doc is not None and doc.get("kind") == "prov.comparison":
            ids = [doc.get(s, {}).get("run_id") for s in ("a", "b")]
            ld = Loaded("comparison", target, {"record": digest}, store=store,
                        comparison=doc, records=_records(store, ids))
            _analyse_scores(ld, ids)
            return ld
        if doc is not None and doc.get("kind") == "prov.sweep":
            return Loaded("sweep", target, _sweep_doc(doc, digest), store=store)
        if not target.startswith("sha256:") and store.find_runs(target):
            info = store.get_run(target)
            return Loaded("run", target, {"run_id": info.run_id}, store=store,
                          records={info.run_id: info.record.to_doc()})
    raise ProvError(f"{target}: no result directory, sweep record, comparison or run of that "
                    f"name (store {store.root})")


def _analyse_scores(ld: Loaded, run_ids: list) -> None:
    """Two worker runs whose scores are still on disk: the same per-position analysis as
    `prov run diverge` (A is the reference), so a stored comparison gets the plots too."""
    from provenance.report.declared import declared_output

    recs = [ld.records.get(r or "") for r in run_ids]
    paths = [declared_output(r, "scores.npz") if r else None for r in recs]
    metas = [declared_output(r, "run.json") if r else None for r in recs]
    if None in paths:
        return
    from runners import api

    loaded = []
    for p in paths:
        with np.load(p) as npz:
            loaded.append((npz["ids"], npz["scores"]))
    (ids, ref), (ids_b, cand) = loaded
    if not np.array_equal(ids, ids_b) or ref.shape != cand.shape or not len(ref):
        return  # other ids, or hidden-state runs (no score rows: their result holds it)
    from provenance.report import textview

    pieces = textview.token_pieces(textview.model_from_records(ld.records), ids)
    decode = (lambda a, b: "".join(pieces[a:b])) if pieces is not None else None
    summary, arrays = api.analyse(ref, cand, ids, decode)
    engines = [_read_json(m).get("config", {}) if m else {} for m in metas]
    ld.arrays = arrays
    ld.doc.update({"summary": summary, "engines": engines,
                   "runs": {"reference": run_ids[0], "candidate": run_ids[1]},
                   "comparison": {"gate": "passed" if ld.comparison.get("comparable")
                                  else "refused"}})


def _read_json(path: Path) -> Any:
    from provenance.model.inputs import read_json

    return read_json(path, "json")
