"""`prov run repeat`, `prov run diverge`, `prov run invariance`: engine runs in workers, then
analysis.

torch, transformers and vLLM are imported only by the workers; this module imports runners
lazily inside the commands so `prov --help` stays light.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from provenance.cli import app
from provenance.cli.gating import (
    default_out,
    gate_check,
    launcher,
    read_policy,
    recorded_policy,
    render_policy,
)
from provenance.model.errors import ProvError

run_app = typer.Typer(help="Repeatability and divergence runs (transformers, vLLM).",
                      no_args_is_help=True)
app.add_typer(run_app, name="run")


def _prepare(model: Path, text: Path, max_tokens: int):
    from runners import api

    if not (model / "config.json").is_file():
        raise ProvError(f"{model}: not a model directory (no config.json)")
    if not text.is_file():
        raise ProvError(f"{text}: no such text file")
    try:
        return api.prepare(model, text, max_tokens)
    except (OSError, ValueError) as exc:
        raise ProvError(str(exc)) from exc


def _config(spec: str):
    from runners import api

    try:
        return api.EngineConfig.parse(spec)
    except api.EngineError as exc:  # a plain Exception: workers raise it without prov
        raise ProvError(str(exc)) from exc


def render_repeat(verdict: dict[str, Any], spec: str, runs: int, path: Path, con) -> None:
    from rich.table import Table

    t = Table(title=f"repeatability: {spec} x {runs}", show_header=False)
    t.add_row("verdict", verdict["verdict"])
    for k in ("layer", "block", "positions", "scores_max_abs_diff_in_block", "run"):
        if k in verdict:
            t.add_row(k, str(verdict[k]))
    t.add_row("result", str(path))
    con.print(t)


def render_diverge(summary: dict[str, Any], ref: str, cand: str, path: Path, con) -> None:
    from rich.table import Table

    from provenance.report import figure_rows

    t = Table(title=f"divergence: {ref}  vs  {cand}")
    t.add_column("figure")
    t.add_column("value", justify="right")
    for label, value in figure_rows(summary):
        t.add_row(label, value)
    t.add_row("result", str(path))
    con.print(t)
    if summary["clusters"]:
        c = Table(title="disagreement clusters (first 10)")
        for col in ("positions", "n", "mean KL", "tokens", "in context"):
            c.add_column(col)
        for cl in summary["clusters"][:10]:
            c.add_row(f"{cl['start']}-{cl['end']}", str(cl["disagreements"]),
                      f"{cl['mean_kl']:.2e}", repr(cl["text"][:30]),
                      repr(cl.get("context", "")[:70]))
        con.print(c)


@run_app.command("repeat")
def repeat(
    engine: str = typer.Option(..., help="engine spec, e.g. transformers:attn=sdpa or vllm"),
    model: Path = typer.Option(..., help="model directory (config.json, weights, tokenizer)"),
    text: Path = typer.Option(..., help="evaluation text file"),
    n: int = typer.Option(3, help="number of runs (separate processes)"),
    out: Path = typer.Option(None, help="result directory"),
    max_tokens: int = typer.Option(1024, help="score at most this many tokens"),
    block: int = typer.Option(256, help="positions per digest block"),
    workdir: Path = typer.Option(None, help="where worker outputs go (default: OUT/../.work)"),
    as_json: bool = typer.Option(False, "--json", help="print the summary as JSON"),
    standalone: bool = typer.Option(False, "--standalone",
                                    help="plain child processes: no run records, no gate"),
) -> None:
    """Run one configuration N times and check the results are bit-identical."""
    from provenance.cli.output import console, print_json
    from runners import api

    if n < 2:
        raise ProvError("--n must be at least 2")
    cfg = _config(engine)
    prep = _prepare(model, text, max_tokens)
    out = out or default_out("repeat")
    work = workdir or out.parent / f".{out.name}.work"
    try:
        res = api.run_repeat(cfg, prep, n, work, out, block=block,
                             launcher=launcher(standalone), check=gate_check([], None, standalone))
    except (api.LaunchError, api.EngineError, api.DisclosureError) as exc:
        raise ProvError(str(exc), 3) from exc
    if as_json:
        print_json({"result": str(res.result_path), **res.verdict})
    else:
        render_repeat(res.verdict, cfg.spec, n, res.result_path, console())
    raise typer.Exit(0 if res.identical else 1)


@run_app.command("diverge")
def diverge(
    ref: str = typer.Option(..., help="reference engine spec"),
    cand: str = typer.Option(..., help="candidate engine spec"),
    model: Path = typer.Option(..., help="model directory"),
    text: Path = typer.Option(..., help="evaluation text file"),
    vary: list[str] = typer.Option([], help="declared variable under test (gate preset or key)"),
    out: Path = typer.Option(None, help="result directory"),
    max_tokens: int = typer.Option(1024, help="score at most this many tokens"),
    gap: int = typer.Option(8, help="merge disagreements closer than this into one cluster"),
    workdir: Path = typer.Option(None, help="where worker outputs go"),
    policy: Path = typer.Option(None, "--policy", help="acceptance policy (TOML [[check]] "
                                "tables); the exit status is its verdict: PASS 0, FAIL 1, "
                                "NOT_COMPARABLE 3, NOT_EVALUATED 5"),
    noise_floor: bool = typer.Option(True, "--noise-floor/--no-noise-floor",
                                     help="execute the reference a second time and measure it "
                                     "against itself (one more reference run); "
                                     "--no-noise-floor skips it and marks summary.noise_floor "
                                     "not computable"),
    as_json: bool = typer.Option(False, "--json", help="print the summary as JSON"),
    standalone: bool = typer.Option(False, "--standalone",
                                    help="plain child processes: no run records, no gate"),
) -> None:
    """Compare a candidate configuration with a reference on the same token ids.

    Each engine run goes through the `prov exec` supervisor; the two runs must pass the
    comparison gate (anything that differs must be declared with --vary, e.g.
    --vary attention-backend) before any figure is computed. The noise floor then executes
    the reference configuration once more, which must pass the gate with nothing declared.
    """
    from provenance.cli.output import console, print_json
    from provenance.model.policy import policy_exit, refused_under
    from runners import api

    pol = read_policy(policy)
    ref_cfg, cand_cfg = _config(ref), _config(cand)
    prep = _prepare(model, text, max_tokens)
    out = out or default_out("diverge")
    work = workdir or out.parent / f".{out.name}.work"
    try:
        res = api.run_diverge(ref_cfg, cand_cfg, prep, work, out, launcher=launcher(standalone),
                              gap=gap, check=gate_check(vary, None, standalone), policy=pol,
                              noise_floor=noise_floor,
                              repeat_check=gate_check([], None, standalone))
    except (api.LaunchError, api.EngineError, api.DisclosureError, ValueError) as exc:
        raise ProvError(str(exc), 3) from exc
    except ProvError as exc:
        raise refused_under(pol, exc) from exc
    block = recorded_policy(res.result_path) if pol else None
    if as_json:
        print_json({"result": str(res.result_path), **res.summary,
                    **({"policy": block} if block else {})})
    else:
        render_diverge(res.summary, ref_cfg.spec, cand_cfg.spec, res.result_path, console())
        from provenance.report import sparkline_line

        console().print(sparkline_line(~res.arrays["agree"]), markup=False, highlight=False)
        if block:
            render_policy(block, console())
    raise typer.Exit(policy_exit(block))


def render_invariance(summary: dict[str, Any], spec: str, path: Path, con) -> None:
    from rich.table import Table

    t = Table(title=f"invariance: {spec}  -> {summary['verdict']}")
    for col in ("probe", "identical", "first difference", "top-1 agreement", "max |dlogprob|"):
        t.add_column(col)
    rows = {**summary["probes"], "control (planted)": summary["control"]}
    for name, p in rows.items():
        first = p["first_difference"]
        where = f"{first['pair']}: {first['where']} {first['position']}" if first else "-"
        t.add_row(name, "yes" if p["identical"] else "NO", where,
                  f"{p['top1_agreement']:.4%}", f"{p['max_abs_logprob_diff']:.3e}")
    for name, why in summary["not_applicable"].items():
        t.add_row(name, "-", why, "-", "-")
    con.print(t)
    if summary["control"].get("note"):
        con.print(summary["control"]["note"])
    if (server := summary.get("server")) is not None:
        con.print(f"server run: {server['run_id']}" if server["bound"] else server["why"])
    con.print(f"result: {path}")


@run_app.command("invariance")
def invariance(
    engine: str = typer.Option(..., help="engine spec, e.g. vllm:batch_invariant=1,"
                                         "prefix_caching=1,max_num_batched_tokens=512, or "
                                         "server:server_url=http://127.0.0.1:8000"),
    model: Path = typer.Option(..., help="model directory (config.json, weights, tokenizer)"),
    text: Path = typer.Option(..., help="text the prompts are cut from"),
    fillers: int = typer.Option(16, help="filler prompts beside the needle (1..64)"),
    seed: int = typer.Option(0, help="seed of the filler lengths and the needle's positions"),
    needle_tokens: int = typer.Option(96, help="the needle prompt's length"),
    filler_min: int = typer.Option(8, help="shortest filler prompt"),
    filler_max: int = typer.Option(64, help="longest filler prompt"),
    placements: int = typer.Option(3, help="positions of the needle in the batch"),
    max_new: int = typer.Option(8, help="greedy continuation length"),
    probe: list[str] = typer.Option([], help="probes to run (default: all): run_to_run, "
                                             "needle, batch_size, prefix_cache, "
                                             "chunked_prefill, served"),
    clients: int = typer.Option(16, help="concurrent clients of the served probe (2..64)"),
    control: str = typer.Option("batch_fp16_sum", help="the planted op of the negative "
                                                       "control (noop: one that cannot fail)"),
    out: Path = typer.Option(None, help="result directory"),
    workdir: Path = typer.Option(None, help="where worker outputs go"),
    policy: Path = typer.Option(None, "--policy", help="acceptance policy (TOML [[check]] "
                                "tables); the exit status is its verdict: PASS 0, FAIL 1, "
                                "NOT_COMPARABLE 3, NOT_EVALUATED 5"),
    as_json: bool = typer.Option(False, "--json", help="print the summary as JSON"),
    standalone: bool = typer.Option(False, "--standalone",
                                    help="a plain child process: no run record"),
) -> None:
    """Probe one configuration for batch invariance: run to run, a needle among fillers,
    batch size 1 vs N, prefix cache, chunked prefill, and (a running server) 1 vs 16
    concurrent clients; a planted negative control beside them.

    Exit 0 only for "invariant"; 1 for "not invariant" or "unproven" (the control did not
    differ, so the probes proved nothing). With --policy, the policy's verdict decides.
    """
    from provenance.cli.output import console, print_json
    from provenance.model.policy import policy_exit
    from runners import api

    pol = read_policy(policy)
    cfg = _config(engine)
    prep = _prepare(model, text, 1 << 20)
    spec = api.InvarianceSpec(fillers, seed, needle_tokens, filler_min, filler_max, placements,
                              max_new, control, tuple(probe) or api.InvarianceSpec.probes,
                              clients)
    try:
        spec.check()
    except ValueError as exc:
        raise ProvError(str(exc)) from exc
    out = out or default_out("invariance")
    work = workdir or out.parent / f".{out.name}.work"
    try:
        res = api.run_invariance(cfg, prep, spec, work, out, launcher=launcher(standalone),
                                 policy=pol)
    except (api.LaunchError, api.EngineError, api.DisclosureError) as exc:
        raise ProvError(str(exc), 3) from exc
    block = recorded_policy(res.result_path) if pol else None
    if as_json:
        print_json({"result": str(res.result_path), "run_id": res.run_id, **res.summary,
                    **({"policy": block} if block else {})})
    else:
        render_invariance(res.summary, cfg.spec, res.result_path, console())
        if block:
            render_policy(block, console())
    raise typer.Exit(policy_exit(block, 0 if res.verdict == "invariant" else 1))
