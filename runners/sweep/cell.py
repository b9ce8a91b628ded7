"""Run one cell where it lands: `repeats` engine runs under the `prov exec` supervisor, then
the batch-invariance probes (runners/invariance.py) when the spec has an [invariance] table.

On the driver's machine (local executor) the runs go straight into the driver's store. On a
Ray node they go into a private store of the cell's own; its objects (the runs' record
chains, manifests, logs, output trees and the scores) are then returned for the driver to
merge (`provenance.store.merge`), and the private store is removed. A store left behind by
an attempt whose worker died is removed by the next attempt on that node.

The probes' run is one more supervised run of the cell, shipped the same way; the JSON of
its result is stored as an object (the result directory goes with the cell's temporary
one), and the cell keeps the verdict and a per-probe summary.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from provenance.model.errors import ProvError
from provenance.model.redact import KEY_FILE
from runners.engines import EngineConfig
from runners.execute import execute
from runners.fingerprint import model_digest
from runners.invariance import InvarianceOutcome, InvarianceSpec, run_invariance
from runners.launch import supervised
from runners.prepare import Prepared
from runners.repeat import compare_repeats

CELL_DIR_PREFIX = "prov-sweep-cell-"


class CellError(ProvError, RuntimeError):
    """A cell that cannot run here (wrong model on this node, ...): not worth a retry."""


def payload(cell, spec, prep, cwd: Path, redact_key: bytes) -> dict[str, Any]:
    """Everything a node needs, as plain picklable data. `redact_key`: the driver store's
    redaction key, so that a secret the cells share (HF_TOKEN on every node) gets the same
    keyed digest in every private store and the gate sees it unchanged; the nodes hold the
    secrets themselves, so the key tells them nothing new."""
    return {
        "cell_id": cell.cell_id, "key": cell.key, "label": cell.label,
        "engine_spec": cell.config.spec, "options": dict(cell.config.options),
        "engine": cell.config.engine, "model": str(Path(spec.model).resolve()),
        "ids": np.asarray(prep.ids, dtype=np.int64), "model_digest": prep.model_digest,
        "tokenizer_digest": prep.tokenizer_digest, "text_digest": prep.text_digest,
        "tokens_total": prep.truncated_from, "block": spec.block, "repeats": spec.repeats,
        "sweep": spec.name, "cwd": str(cwd), "redact_key": redact_key.hex(),
        "invariance": spec.invariance,
    }


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _clean_stale(base: Path) -> None:
    """Remove cell directories of attempts whose process is gone (a killed worker's)."""
    for d in base.glob(CELL_DIR_PREFIX + "*"):
        try:
            pid = int(d.name[len(CELL_DIR_PREFIX):].split("-")[0])
        except ValueError:
            continue
        if not _pid_alive(pid):
            shutil.rmtree(d, ignore_errors=True)


def _private_store_key(root: Path, key: bytes) -> None:
    """The driver's redaction key in the private store, before its first record."""
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root / KEY_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as fh:
        fh.write(key.hex() + "\n")


def _probe(p: dict[str, Any], config: EngineConfig, prep: Prepared, tmp: Path,
           launcher) -> InvarianceOutcome:
    """The invariance probes of the cell, with the launcher of its repeats."""
    spec = InvarianceSpec(**{**p["invariance"], "probes": tuple(p["invariance"]["probes"])})
    return run_invariance(config, prep, spec, tmp / "work" / f"sweep-{p['cell_id']}-inv",
                          tmp / "invariance-result", launcher)


def probe_doc(store, res: InvarianceOutcome) -> dict[str, Any]:
    """What the cell keeps of the probes: the verdict, per probe identical / first difference
    / top-1 agreement / max |dlogprob|, the control, and the stored result JSON."""
    s = res.summary
    keep = ("identical", "first_difference", "top1_agreement", "max_abs_logprob_diff")
    info = store.get_run(res.run_id)
    return {"verdict": res.verdict, "run_id": res.run_id, "record": info.record_digest,
            "result": store.put_bytes((res.result_path / "result.json").read_bytes(),
                                      "sweep.invariance"),
            "probes": {name: {k: v.get(k) for k in keep} for name, v in s["probes"].items()},
            "control": {k: s["control"].get(k) for k in ("op", "identical",
                                                          "failed_as_required")},
            "not_applicable": s["not_applicable"]}


def run_cell(p: dict[str, Any], store_root: str | None = None,
             node: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run the cell; with `store_root` None, into a private store whose objects are returned
    under `objects` as (digest, bytes) pairs."""
    from provenance.store import open_store

    t0 = time.time()
    ship = store_root is None
    base = Path(tempfile.gettempdir())
    _clean_stale(base)
    tmp = Path(tempfile.mkdtemp(prefix=f"{CELL_DIR_PREFIX}{os.getpid()}-", dir=base))
    try:
        if ship:
            _private_store_key(tmp / "store", bytes.fromhex(p["redact_key"]))
        store = open_store(tmp / "store" if ship else store_root)
        _check_model(p)
        runs, probed = _execute(p, store, tmp)
        out = _cell_doc(p, store, runs, tmp, node)
        out["seconds"] = round(time.time() - t0, 3)
        shipped = [r.run_id for r in runs]
        if probed is not None:
            out["invariance"] = probe_doc(store, probed)
            shipped.append(probed.run_id)
        if ship:
            out["objects"] = _objects(store, shipped, out)
            store.close()
        return out
    finally:
        with contextlib.suppress(OSError):
            shutil.rmtree(tmp)


def _check_model(p: dict[str, Any]) -> None:
    """The model on this node must be the sweep's, by content."""
    here = model_digest(Path(p["model"]))
    if here != p["model_digest"]:
        raise CellError(f"cell {p['label']}: the model at {p['model']} on "
                        f"{socket.gethostname()} has digest {here}, the sweep's is "
                        f"{p['model_digest']}")


def _execute(p: dict[str, Any], store, tmp: Path):
    """The cell's repeats (and its invariance probe, if asked), run from the project's
    directory where this node has it, so the runs record its git state as `prov run` does."""
    prep = Prepared(Path(p["model"]), "", p["ids"], [], p["tokens_total"],
                    p["model_digest"], p["tokenizer_digest"], p["text_digest"])
    config = EngineConfig(p["engine"], tuple(sorted(p["options"].items())))
    cwd = p["cwd"] if os.path.isdir(p["cwd"]) else str(tmp)
    launcher = supervised(store=store)
    old = os.getcwd()
    os.chdir(cwd)
    try:
        runs = [execute(config, prep, tmp / "work", f"sweep-{p['cell_id']}-r{i}", p["block"],
                        launcher) for i in range(p["repeats"])]
        probed = _probe(p, config, prep, tmp, launcher) if p.get("invariance") else None
    finally:
        os.chdir(old)
    return runs, probed


def _cell_doc(p: dict[str, Any], store, runs: list, tmp: Path,
              node: dict[str, Any] | None) -> dict[str, Any]:
    """The cell's document: its runs and records, its scores (stored), its repeat verdict."""
    verdict = compare_repeats(runs, p["block"]) if len(runs) > 1 else \
        {"verdict": "not run (1 repeat)"}
    scores = store.put_bytes(
        (tmp / "work" / f"sweep-{p['cell_id']}-r0" / "scores.npz").read_bytes(),
        "sweep.scores")
    infos = [store.get_run(r.run_id) for r in runs]
    return {
        "cell_id": p["cell_id"], "key": p["key"], "label": p["label"],
        "node": {"hostname": socket.gethostname(), "pid": os.getpid(), **(node or {})},
        "runs": [i.run_id for i in infos],
        "records": [i.record_digest for i in infos],
        "manifest_digest": infos[0].manifest_digest,
        "snapshot_digest": store.manifest_object(infos[0].record.manifest).digest(),
        "scores": scores, "verdict": verdict,
        "runtime": runs[0].meta.get("runtime", {}).get(p["engine"]),
    }


def _objects(store, shipped: list[str], out: dict[str, Any]) -> list:
    """The private store's objects the driver needs: each run's closure, the scores and the
    invariance result, as (digest, bytes) pairs."""
    from provenance.store import export_objects, run_closure

    digests = [d for r in shipped for d in run_closure(store, r)] + [out["scores"]]
    if "invariance" in out:
        digests.append(out["invariance"]["result"])
    return export_objects(store, digests)
