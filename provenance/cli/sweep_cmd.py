"""`prov sweep SPEC.toml [--ray ADDRESS]`: a matrix of engine runs under one gate.

Everything heavy (runners, numpy, ray) is imported inside the command.
"""

from __future__ import annotations

import contextlib
import sys
import time
from pathlib import Path
from typing import Any

import typer

from provenance.cli import app
from provenance.model.errors import ProvError

STATE_STYLE = {"pending": "dim", "submitted": "cyan", "running": "cyan", "retrying": "yellow",
               "done": "green", "skipped": "green", "failed": "red",
               "not run": "yellow"}


class CellProgress:
    """One line per cell: state, node, attempt, time. A live table on a terminal, else one
    printed line per event (logs and CI stay readable)."""

    def __init__(self, con, live: bool) -> None:
        self.con = con
        self.rows: dict[str, dict[str, Any]] = {}
        self.labels: dict[str, str] = {}
        self.t0 = time.time()
        self.live = None
        if live:
            from rich.live import Live

            self.live = Live(self._table(), console=con, refresh_per_second=4, transient=False)

    def _table(self):
        from rich.table import Table

        t = Table(title="cells", expand=False)
        for col in ("cell", "state", "node", "attempt", "seconds"):
            t.add_column(col)
        for cid, r in self.rows.items():
            st = r["state"]
            t.add_row(self.labels[cid], f"[{STATE_STYLE.get(st, '')}]{st}[/]",
                      str(r.get("node", "")), str(r.get("attempt", "")),
                      str(r.get("seconds", "")))
        return t

    def event(self, cell_id: str, state: str, info: dict[str, Any]) -> None:
        if info.get("label"):
            self.labels[cell_id] = info["label"]
        row = self.rows.setdefault(cell_id, {})
        row["state"] = state
        node = info.get("node")
        if isinstance(node, dict):
            node = node.get("node_ip") or node.get("hostname")
            if isinstance(info.get("node"), dict) and info["node"].get("node_id"):
                node = f"{node} {info['node']['node_id'][:8]}"
        if node:
            row["node"] = node
        for k in ("attempt", "seconds"):
            if k in info:
                row[k] = info[k]
        if "attempts" in info:
            row["attempt"] = info["attempts"]
        if self.live is not None:
            self.live.update(self._table())
        else:
            extra = f" on {row['node']}" if row.get("node") else ""
            err = f": {info['error']}" if info.get("error") else ""
            if info.get("invariance"):
                err += f" (invariance: {info['invariance']})"
            self.con.print(f"[{time.time() - self.t0:6.1f}s] {self.labels.get(cell_id, cell_id)}"
                           f" {state}{extra}{err}", markup=False, highlight=False)

    def __enter__(self):
        if self.live is not None:
            self.live.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self.live is not None:
            self.live.__exit__(*exc)


def _fmt(x: float | None, pct: bool = False) -> str:
    if x is None:
        return "-"
    return f"{100 * x:.2f}%" if pct else f"{x:.2e}"


INVARIANCE_STYLE = {"invariant": "green", "not invariant": "red", "unproven": "yellow"}


def invariance_cell(row: dict[str, Any]) -> str:
    """The cell's invariance verdict, with the first probe that differed (if one did)."""
    inv = row.get("invariance") or {}
    verdict = inv.get("verdict")
    if not verdict:
        return "-"
    differing = [name for name, p in (inv.get("probes") or {}).items() if not p["identical"]]
    why = f" ({', '.join(differing)})" if differing else ""
    if verdict == "unproven":
        why = " (the control did not differ)"
    return f"[{INVARIANCE_STYLE.get(verdict, '')}]{verdict}[/]{why}"


def render_matrix(record: dict[str, Any], con) -> None:
    from rich.table import Table

    t = Table(title=f"sweep {record['name']}: every cell vs reference {record['reference']}")
    probed = any(row.get("invariance") for row in record["cells"])
    for axis in record["axes"]:
        t.add_column(axis)
    for col in ("node", "runs", "gate", "top-1 agree", "mean KL(ref‖cell)", "max KL",
                "repeats") + (("invariance",) if probed else ()):
        t.add_column(col)
    for row in record["cells"]:
        g = row.get("gate") or {}
        gate = {"reference": "[bold]reference[/]", "passed": "[green]passed[/]"}.get(
            g.get("gate", ""), "")
        if g.get("gate") == "flagged":
            gate = "[red]FLAGGED[/] " + ", ".join(
                f"{k}: {v['reference']!r}→{v['cell']!r}" for k, v in g["differing"].items())
        if row["state"] == "failed":
            gate = f"[red]failed[/] {row.get('error', '')}"[:200]
        if row["state"] == "not run":
            gate = f"[yellow]not run[/]: {row.get('reason', '')}"[:200]
        node = row.get("node") or {}
        where = node.get("node_ip") or node.get("hostname") or ""
        if node.get("node_id"):
            where += f" {node['node_id'][:8]}"
        s = row.get("summary") or {}
        verdict = (row.get("verdict") or {}).get("verdict", "-")
        runs = str(len(row.get("runs") or []))
        if row.get("reused"):
            runs += " (resumed)"
        if (row.get("attempts") or 1) > 1:
            runs += f" ({row['attempts']} attempts)"
        t.add_row(*(str(row["values"][a]) for a in record["axes"]), where, runs, gate,
                  "ref" if row["reference"] else _fmt(s.get("top1_agreement"), pct=True),
                  "ref" if row["reference"] else _fmt(s.get("kl_ref_cand_mean")),
                  "ref" if row["reference"] else _fmt(s.get("kl_ref_cand_max")), verdict,
                  *((invariance_cell(row),) if probed else ()))
    con.print(t)


def render_policy_cells(record: dict[str, Any], con) -> None:
    """Each judged cell's verdict and the checks that did not pass."""
    p = record["policy"]
    con.print(f"policy {p['path']} (sha256 {p['sha256'][:16]}...): {p['verdict']} over "
              f"{p['cells']} cell(s)", markup=False, highlight=False)
    for row in record["cells"]:
        if "policy" not in row:
            continue
        bad = [f"{c['statistic']} {c['outcome']}" + (f" ({c['reason']})" if c.get("reason")
                                                      else "")
               for c in row["policy"]["checks"] if c["outcome"] != "pass"]
        con.print(f"  {row['label']}: {row['policy']['verdict']}"
                  + (f": {'; '.join(bad)}" if bad else ""), markup=False, highlight=False)


def _load_spec(spec: Path):
    """The sweep spec, its model directory and text file checked (each a one-line exit 2)."""
    from runners import api

    sp = api.load_spec(spec)  # a SpecError is a ProvError (exit 2)
    if not (sp.model / "config.json").is_file():
        raise ProvError(f"{sp.model}: not a model directory (no config.json)", 2)
    if not sp.text.is_file():
        raise ProvError(f"{sp.text}: no such text file", 2)
    return sp


def _executor(ray: str | None, store_root: str, budget: float | None, jobs: int):
    """Ray's executor for --ray (its connection errors one line), else this machine's.
    --ray with --budget or --jobs is refused by cli/option_checks before this runs."""
    from runners import api

    if not ray:
        deadline = time.time() + budget if budget else None
        return api.LocalExecutor(store_root, deadline=deadline, jobs=jobs)
    try:
        return api.ray_executor(ray)
    except api.SpecError:
        raise
    except Exception as exc:  # ray's own connection errors
        raise ProvError(f"--ray {ray}: cannot connect ({type(exc).__name__}: "
                        f"{str(exc)[:300]})") from None


@app.command()
def sweep(
    spec: Path = typer.Argument(..., help="Sweep spec (TOML): model, text, axes, reference."),
    ray: str = typer.Option(None, "--ray", help="Run each cell as a Ray task on the cluster "
                            "at ADDRESS (host:port or 'auto'); default: this machine."),
    as_json: bool = typer.Option(False, "--json", help="Print the sweep record as JSON."),
    fresh: bool = typer.Option(False, "--fresh", help="Run every cell, even finished ones."),
    budget: float = typer.Option(None, "--budget", min=1, help="Seconds from now after "
                                 "which no further cell is started (local executor); the "
                                 "cells left are recorded as not run."),
    jobs: int = typer.Option(1, "--jobs", "-j", min=1, help="Cells run at once on this "
                             "machine (local executor), each in a worker process of its "
                             "own; a shared GPU needs the engine's memory share (vLLM: "
                             "gpu_memory_utilization)."),
    policy: Path = typer.Option(None, "--policy", help="Acceptance policy (TOML [[check]] "
                                "tables) judged on each cell's row (summary.top1_agreement, "
                                "invariance.verdict, ...); the exit status is the sweep's "
                                "verdict: PASS 0, FAIL 1, NOT_COMPARABLE 3, NOT_EVALUATED 5."),
) -> None:
    """Run a sweep: every cell recorded, gated against the reference cell, compared.

    Exit 0: every cell ran (or was skipped by the spec's [[skip]]) and passed the gate; 3:
    some cell was flagged by the gate (it ran in an environment differing in more than the
    swept keys); 1: some cell failed, or was not started within --budget. With --policy, the
    policy's verdict over the cells decides.
    """
    from provenance.cli.gating import read_policy
    from provenance.cli.output import console, print_json
    from provenance.model.policy import policy_exit
    from provenance.store import open_store
    from runners import api

    pol = read_policy(policy)
    sp = _load_spec(spec)
    store = open_store()
    con = console(stderr=as_json)
    executor = _executor(ray, str(store.root), budget, jobs)
    progress = CellProgress(con, live=con.is_terminal and not as_json)
    try:
        # Ray's driver prints worker deaths etc. on sys.stdout: keep stdout for the result
        with progress, contextlib.redirect_stdout(sys.stderr):
            outcome = api.run_sweep(sp, store, executor, progress.event, resume=not fresh,
                                    policy=pol)
    except (OSError, ValueError) as exc:
        raise ProvError(str(exc)) from None
    finally:
        executor.close()
    if as_json:
        print_json({**outcome.record, "record": outcome.digest})
    else:
        render_matrix(outcome.record, con)
        con.print(f"sweep record {outcome.digest}")
        if pol is not None:
            render_policy_cells(outcome.record, con)
    if pol is not None:
        raise typer.Exit(policy_exit(outcome.record["policy"]))
    if outcome.failed or outcome.unfinished:
        raise typer.Exit(1)
    if outcome.flagged:
        if not as_json:
            con.print(f"[red]{len(outcome.flagged)} cell(s) flagged by the gate: kept out of "
                      "the comparison[/]")
        raise typer.Exit(3)

