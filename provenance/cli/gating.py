"""What `prov run`, `prov replay` and `prov demo` share: the launcher for engine workers and
the gate they pass before any figure is computed (not a command; commands import it)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from provenance.model import split_key
from provenance.model.errors import EXIT_REFUSED, ProvError


def default_out(kind: str) -> Path:
    """Where a result goes when no --out is given: prov-results/KIND-DATE-TIME."""
    return Path("prov-results") / f"{kind}-{time.strftime('%Y%m%d-%H%M%S')}"


def launcher(standalone: bool = False, store=None):
    """Plain child processes (`--standalone`), else every worker a supervised, recorded run."""
    from runners import api

    return api.standalone if standalone else api.supervised(store=store)


def gate_check(vary: list[str], store=None, standalone: bool = False):
    """The comparison gate over two worker runs (`compare_runs`, as `prov compare` does).

    Refuses (exit 3, a table of every differing identity key on stderr) unless each
    difference is covered by a --vary; a passing comparison is recorded in the store.
    """
    if standalone:
        return None

    def check(ref, cand) -> dict[str, Any]:
        from provenance.cli.output import change_table, console
        from provenance.gate import compare_runs
        from provenance.store import open_store

        c = compare_runs(store or open_store(), ref.run_id, cand.run_id, list(vary))
        if not c.ok:
            refused = c.result.refused
            change_table(f"REFUSED: {len(refused)} identity key(s) differ and no "
                         "--vary covers them", refused, console(stderr=True))
            keys = [ch.key for ch in refused]
            shown = _summary(keys)
            raise ProvError(
                f"refused: runs {ref.run_id} and {cand.run_id} differ in {len(keys)} identity "
                f"key(s) not covered by --vary {' '.join(vary) or '(none)'}: {shown}",
                EXIT_REFUSED)
        doc = c.to_json()
        return {"gate": "passed", "comparison_record": c.record, "vary": list(vary),
                "varied_keys": {spec: sorted(v["keys"]) for spec, v in doc["varied"].items()},
                "ignored_keys": sorted(doc["ignored"]), "identical": doc["identical"],
                "loaded_libraries_compared": c.libraries_compared}

    return check


def _summary(keys: list[str], most: int = 8) -> str:
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
