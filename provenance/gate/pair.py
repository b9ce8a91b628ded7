"""The gate between two worker runs of `prov run`, `prov replay` and `prov demo`: the one
`compare_runs`, its refusal as one error, and what a result records of a passing gate."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

from provenance.gate.compare import compare_runs
from provenance.model import split_key
from provenance.model.diff import Change
from provenance.model.errors import EXIT_REFUSED, ProvError


class GatePassed(TypedDict):
    """What a result records of its gate (result.json's `gate` block)."""

    gate: str  # "passed"
    comparison_record: str  # the stored comparison
    vary: list[str]
    varied_keys: dict[str, list[str]]  # per --vary: the keys it covered
    ignored_keys: list[str]
    identical: bool  # same identity digest and the same common libraries
    loaded_libraries_compared: int


class GateRefused(ProvError):
    """Two runs differ in identity keys no --vary covers (exit 3); `refused`: the changes,
    for the table the CLI draws."""

    def __init__(self, message: str, refused: list[Change]) -> None:
        super().__init__(message, EXIT_REFUSED)
        self.refused = refused


def gate_pair(store, ref_id: str, cand_id: str, vary: Sequence[str]) -> GatePassed:
    """What the result records of a passing gate over runs `ref_id` and `cand_id` (the
    comparison record is stored); `GateRefused` unless each difference is declared."""
    c = compare_runs(store, ref_id, cand_id, list(vary))
    if not c.ok:
        refused = c.result.refused
        keys = [ch.key for ch in refused]
        raise GateRefused(
            f"refused: runs {ref_id} and {cand_id} differ in {len(keys)} identity "
            f"key(s) not covered by --vary {' '.join(vary) or '(none)'}: {key_summary(keys)}",
            refused)
    doc = c.to_json()
    return {"gate": "passed", "comparison_record": c.record, "vary": list(vary),
            "varied_keys": {spec: sorted(v["keys"]) for spec, v in doc["varied"].items()},
            "ignored_keys": sorted(doc["ignored"]), "identical": doc["identical"],
            "loaded_libraries_compared": c.libraries_compared}


def key_summary(keys: list[str], most: int = 8) -> str:
    """The refused keys in one line: every key when few, else where they are (the first two
    segments of each key, largest groups first), so a long list still says what differs."""
    if len(keys) <= most:
        return ", ".join(keys)
    groups: dict[str, int] = {}
    for key in keys:
        head = ".".join(split_key(key)[:2])
        groups[head] = groups.get(head, 0) + 1
    ranked = sorted(groups.items(), key=lambda kv: (-kv[1], kv[0]))
    shown = ", ".join(f"{head} ({n})" for head, n in ranked[:most])
    return shown + (f" (+{len(ranked) - most} more groups)" if len(ranked) > most else "")
