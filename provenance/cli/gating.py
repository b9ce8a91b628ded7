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


# ---- the acceptance policy (--policy FILE) ------------------------------------------------

def read_policy(path: Path | None):
    """The policy, read and validated before anything runs (bad policy: exit 2)."""
    from provenance.model.policy import load_policy

    return load_policy(path) if path is not None else None


def recorded_policy(result: Path) -> dict[str, Any] | None:
    """The policy block as result.json holds it (what was recorded is what is reported)."""
    import json

    return json.loads((Path(result) / "result.json").read_text()).get("policy")


def refused_under(policy, exc: ProvError) -> ProvError:
    """A gate refusal under a policy is its NOT_COMPARABLE verdict (exit 3)."""
    if policy is None or exc.exit_code != EXIT_REFUSED:
        return exc
    return ProvError(f"{exc}; policy {policy.path}: NOT_COMPARABLE", EXIT_REFUSED)


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


def policy_exit(block: dict[str, Any] | None, default: int = 0) -> int:
    """The exit status: the policy's verdict when there is one, else the command's own."""
    from provenance.model.policy import VERDICT_EXIT

    return default if block is None else VERDICT_EXIT[block["verdict"]]
