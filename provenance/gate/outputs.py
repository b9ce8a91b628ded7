"""What the two runs wrote: each declared output identical, differing, or missing on a side.

Information beside the verdict, never a reason to refuse: the gate asks whether two runs
may be compared, the outputs say what came of them. A run's record holds its declared
outputs (`prov exec -o FILE`, provenance/exec/outputs.py) by the name they were declared
under, each with its digest (a file's sha256, a directory's tree object). Outputs are
matched by that name; when exactly one output of each side is left unmatched (repeats
writing `r1.txt` and `r2.txt`), those two are paired. An output declared but not written
(or not declared on a side) is missing there. A side that is not a run (a manifest file or
a stored manifest) has no outputs, and nothing is compared.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

IDENTICAL, DIFFERS = "identical", "differs"
MISSING_A, MISSING_B, MISSING = "missing_a", "missing_b", "missing"
WRITTEN = ("file", "dir", "broken-link")


@dataclass(frozen=True)
class OutputComparison:
    name: str  # as side A declared it (B's, when A has none)
    state: str  # identical, differs, missing_a, missing_b, missing (on both sides)
    a: dict[str, Any] | None  # the record's entries, None where not declared
    b: dict[str, Any] | None
    b_name: str | None = None  # when paired with an output of another name

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"state": self.state, "a": _digest(self.a), "b": _digest(self.b)}
        if self.b_name is not None:
            out["b_name"] = self.b_name
        return out


def _digest(entry: dict[str, Any] | None) -> str | None:
    """What identifies an output's content: its digest, a dangling link's target."""
    if not entry or entry.get("type") not in WRITTEN:
        return None
    if entry.get("type") == "broken-link":
        return f"link:{entry.get('target')}"
    return entry.get("digest")


def _state(a: dict[str, Any] | None, b: dict[str, Any] | None) -> str:
    da, db = _digest(a), _digest(b)
    if da is None and db is None:
        return MISSING
    if da is None or db is None:
        return MISSING_A if da is None else MISSING_B
    return IDENTICAL if da == db else DIFFERS


def compare_outputs(a: dict[str, Any], b: dict[str, Any]) -> list[OutputComparison]:
    """Every declared output of either run, by name (one leftover on each side paired)."""
    only_a = [n for n in sorted(a) if n not in b]
    only_b = [n for n in sorted(b) if n not in a]
    out = [OutputComparison(n, _state(a[n], b[n]), a[n], b[n]) for n in sorted(a) if n in b]
    if len(only_a) == 1 and len(only_b) == 1:
        na, nb = only_a[0], only_b[0]
        out.append(OutputComparison(na, _state(a[na], b[nb]), a[na], b[nb], b_name=nb))
        return out
    out += [OutputComparison(n, _state(a[n], None), a[n], None) for n in only_a]
    out += [OutputComparison(n, _state(None, b[n]), None, b[n]) for n in only_b]
    return out


def outputs_json(found: list[OutputComparison]) -> dict[str, Any]:
    """`name -> {state, a, b[, b_name]}`, as `prov compare --json` prints `outputs`."""
    return {o.name: o.to_json() for o in found}


STATES = (IDENTICAL, DIFFERS, MISSING_A, MISSING_B, MISSING)


def counts(found: list[OutputComparison]) -> dict[str, int]:
    """state -> how many outputs are in it, in the order of STATES (a one-line summary)."""
    n = {s: sum(o.state == s for o in found) for s in STATES}
    return {s: k for s, k in n.items() if k}
