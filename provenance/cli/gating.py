"""What `prov run`, `prov replay` and `prov demo` share: the launcher for engine workers and
the gate they pass before any figure is computed (not a command; commands import it)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from provenance.gate import GatePassed


def default_out(kind: str) -> Path:
    """Where a result goes when no --out is given: prov-results/KIND-DATE-TIME."""
    return Path("prov-results") / f"{kind}-{time.strftime('%Y%m%d-%H%M%S')}"


def launcher(standalone: bool = False, store=None):
    """Plain child processes (`--standalone`), else every worker a supervised, recorded run."""
    from runners import api

    return api.standalone if standalone else api.supervised(store=store)


def gate_check(vary: list[str], store=None, standalone: bool = False):
    """The comparison gate over two worker runs (`provenance.gate.pair`, as `prov compare`
    gates): refuses (exit 3, a table of every differing identity key on stderr) unless each
    difference is covered by a --vary; a passing comparison is recorded in the store.
    `--standalone` runs have no records to gate: their check is the runners' `ungated`,
    which the result names.
    """
    if standalone:
        from runners import api

        return api.ungated

    def check(ref, cand) -> GatePassed:
        from provenance.gate import GateRefused, gate_pair
        from provenance.store import open_store

        try:
            return gate_pair(store or open_store(), ref.run_id, cand.run_id, vary)
        except GateRefused as exc:
            from provenance.cli.output import change_table, console

            change_table(f"REFUSED: {len(exc.refused)} identity key(s) differ and no "
                         "--vary covers them", exc.refused, console(stderr=True))
            raise

    return check


# ---- the acceptance policy (--policy FILE) ------------------------------------------------

def read_policy(path: Path | None):
    """The policy, read and validated before anything runs (bad policy: exit 2)."""
    from provenance.model.policy import load_policy

    return load_policy(path) if path is not None else None


def recorded_policy(result: Path) -> dict[str, Any] | None:
    """The policy block as result.json holds it (what was recorded is what is reported)."""
    import json

    return json.loads((Path(result) / "result.json").read_text()).get("policy")


def render_policy(block: dict[str, Any], con) -> None:
    from rich.table import Table

    t = Table(title=f"policy {block['path']} (sha256 {block['sha256'][:16]}...): "
                    f"{block['verdict']}")
    for col in ("statistic", "condition", "observed", "outcome"):
        t.add_column(col)
    for c in block["checks"]:
        cond = ", ".join(f"{k} {c[k]!r}" for k in ("min", "max", "equals", "one_of") if k in c)
        t.add_row(c["statistic"], cond, _observed(c["observed"]),
                  c["outcome"] + (f": {c['reason']}" if c.get("reason") else ""))
    con.print(t)


def _observed(v: Any) -> str:
    import json

    return "-" if v is None else (f"{v:.6g}" if isinstance(v, float) else json.dumps(v))
