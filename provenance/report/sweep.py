"""Sweep records for the report: validated at the edge, laid out as a matrix.

The shape read here (`prov-sweep/1`, documented in docs/reference/formats.md): `axes`
(name -> values), `reference` (a cell id), `cells` (id, config {axis: value}, status,
optional node, run_ids, flagged + flag_keys from the gate, top1_agreement, kl_mean, kl_max,
repeat verdict, result, optional invariance verdict).
"""

from __future__ import annotations

from itertools import product
from pathlib import Path
from typing import Any

from provenance.model.errors import ProvError

CELL_FIGURES = ("top1_agreement", "kl_mean", "kl_max", "kl_p99", "kl_rev_mean", "kl_rev_p99",
                "kl_rev_max")


def validate_sweep(doc: Any, where: Path | str) -> dict[str, Any]:
    def bad(why: str) -> ProvError:
        return ProvError(f"{where}: not a usable sweep record: {why}")

    if not isinstance(doc, dict):
        raise bad("not a JSON object")
    axes = doc.get("axes")
    if not isinstance(axes, dict) or not axes or not all(
            isinstance(v, list) and v for v in axes.values()):
        raise bad("`axes` must map each axis to a non-empty list of values")
    cells = doc.get("cells")
    if not isinstance(cells, list) or not cells:
        raise bad("`cells` must be a non-empty list")
    ids = set()
    for i, c in enumerate(cells):
        if not isinstance(c, dict) or not isinstance(c.get("id"), str):
            raise bad(f"cell {i} has no string `id`")
        if not isinstance(c.get("config"), dict):
            raise bad(f"cell {c['id']} has no `config` object")
        for k in CELL_FIGURES:
            if c.get(k) is not None and not isinstance(c[k], int | float):
                raise bad(f"cell {c['id']}: `{k}` is not a number")
        if c.get("invariance") is not None and not isinstance(c["invariance"], str):
            raise bad(f"cell {c['id']}: `invariance` is not a verdict string")
        ids.add(c["id"])
    if doc.get("reference") not in ids:
        raise bad("`reference` does not name a cell")
    return doc


def sweep_matrix(doc: dict[str, Any]) -> dict[str, Any]:
    """Rows: values of the first axis; columns: every combination of the other axes."""
    axes = list(doc["axes"].items())
    row_axis, row_values = axes[0]
    col_axes = axes[1:]
    cols = [dict(zip([a for a, _ in col_axes], combo, strict=True))
            for combo in product(*[v for _, v in col_axes])] or [{}]
    by_config: dict[tuple, dict] = {}
    for c in doc["cells"]:
        key = tuple(str(c["config"].get(a)) for a, _ in axes)
        by_config.setdefault(key, c)  # repeats of a configuration: the first cell listed
    rows = []
    for rv in row_values:
        row = []
        for col in cols:
            key = (str(rv), *(str(col[a]) for a, _ in col_axes))
            row.append(by_config.get(key))
        rows.append({"value": rv, "cells": row})
    return {"row_axis": row_axis, "col_axes": [a for a, _ in col_axes],
            "columns": [", ".join(f"{k}={v}" for k, v in col.items()) or "(all)" for col in cols],
            "rows": rows, "reference": doc["reference"]}


def _plain(v: Any) -> str:
    """A value for a caption: lists joined, tables as `key value` pairs, never a repr."""
    if isinstance(v, list | tuple):
        return ", ".join(_plain(x) for x in v)
    if isinstance(v, dict):
        return ", ".join(f"{k} {_plain(x)}" for k, x in v.items())
    return str(v)


def _detail(v: dict[str, Any]) -> str | None:
    """What qualifies a resolved value: torch's sdpa kernel (and what forced it), or the
    cache setting vLLM was given."""
    kern = v.get("sdpa_kernel")
    if isinstance(kern, dict):
        forced = kern.get("forced")
        return f"kernel {_plain(kern.get('resolved'))}" + (
            f", forced {_plain(forced)}" if forced and forced != "none" else "")
    extra = v.get("cache_config") or kern
    return _plain(extra) if extra else None


def _resolved(runtime: Any) -> str | None:
    """What the engine resolved (vLLM: attention backend, KV cache; transformers: each
    model's attention implementation, dtype and quantization), for the cell's caption."""
    if not isinstance(runtime, dict):
        return None
    parts = []
    for key in ("attention_backend", "kv_cache_dtype"):
        v = runtime.get(key)
        if isinstance(v, dict) and v.get("resolved"):
            extra = _detail(v)
            fa = v.get("flash_attn_version")
            parts.append(_plain(v["resolved"]) + (f" ({extra})" if extra else "")
                         + (f" FA{fa}" if fa and fa != "none" else ""))
    for m in (runtime.get("models") or {}).values():  # the probe's transformers models
        if isinstance(m, dict) and m.get("attn_implementation"):
            quant = m.get("quantization")
            parts.append(f"{_plain(m['attn_implementation'])} {_plain(m.get('dtype', '?'))}"
                         + (f" {_plain(quant)}" if quant and quant != "none" else ""))
    return " / ".join(parts) or None


def from_store_record(rec: dict[str, Any]) -> dict[str, Any]:
    """A `prov sweep` record (kind `prov.sweep`, stored by the sweep driver) in the shape
    above: cells named by their label, the gate's refused keys as flag_keys."""
    cells = []
    for row in rec.get("cells") or []:
        gate = row.get("gate") or {}
        summary = row.get("summary") or {}
        node = row.get("node")
        verdict = row.get("verdict")
        probed = row.get("invariance")
        cells.append({
            "id": str(row.get("label")), "config": dict(row.get("values") or {}),
            "status": row.get("state"),
            "node": node.get("hostname") if isinstance(node, dict) else node,
            "run_ids": list(row.get("runs") or []),
            "flagged": gate.get("gate") == "flagged",
            "flag_keys": sorted(gate.get("differing") or {}),
            "top1_agreement": summary.get("top1_agreement"),
            "kl_mean": summary.get("kl_ref_cand_mean"), "kl_max": summary.get("kl_ref_cand_max"),
            "kl_p99": summary.get("kl_ref_cand_p99"),
            "kl_rev_mean": summary.get("kl_cand_ref_mean"),
            "kl_rev_p99": summary.get("kl_cand_ref_p99"),
            "kl_rev_max": summary.get("kl_cand_ref_max"),
            "first_disagreement": summary.get("first_disagreement"),
            "repeat": verdict.get("verdict") if isinstance(verdict, dict) else verdict,
            "reason": _plain(row.get("reason") or row.get("error") or "") or None,
            "resolved": _resolved(row.get("runtime")),
            "invariance": probed.get("verdict") if isinstance(probed, dict) else None,
        })
    return {"format": "prov-sweep/1", "name": rec.get("name"),
            "spec_digest": rec.get("spec_digest"), "axes": rec.get("axes"),
            "reference": rec.get("reference"), "cells": cells}
