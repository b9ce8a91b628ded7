"""`prov run replay`: replay a captured agentic workstream under each configuration.

Registered on the `prov run` group. Each configuration is a worker run under the `prov exec`
supervisor; every candidate must pass the comparison gate against the reference (the first
--config) before any figure is computed. runners is imported inside the command only.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import typer

from provenance.cli.gating import (
    default_out,
    gate_check,
    launcher,
    read_policy,
    recorded_policy,
    render_policy,
)
from provenance.cli.run_cmd import run_app
from provenance.model.errors import ProvError

DEFAULT_CONFIGS = ["transformers:attn=sdpa,dtype=float32", "transformers:kv_cache=int8",
                   "transformers:kv_cache=int4"]
DEMO_MODEL = Path.home() / ".cache" / "prov" / "replay-demo" / "model"


def render_replay(summary: dict[str, Any], path: Path, con) -> None:
    from rich.table import Table

    turns = summary["turns"]
    names = {c["config"]: f"c{i}" for i, c in enumerate(summary["configs"])}
    for label, short in names.items():
        con.print(f"{short} = {label}" + ("  (reference)" if short == "c0" else ""))
    m = Table(title=f"replay of {summary['workstream']}: tool-call verdict per turn "
                    "(open loop / closed loop when they differ)")
    m.add_column("cfg")
    for t in turns:
        m.add_column(f"t{t['turn']} {','.join(t['tools'])}")
    m.add_column("first fail")
    m.add_column("recovered")
    for c in summary["configs"]:
        o, cl = c["open_loop"]["turns"], c["closed_loop"]["turns"]
        cells = [a["verdict"] if a["verdict"] == b["verdict"] else
                 f"{a['verdict']} / {b['verdict']}" for a, b in zip(o, cl, strict=True)]
        first = c["closed_loop"]["first_failure"]
        rec = c["closed_loop"]["recovered"]
        m.add_row(names[c["config"]], *cells, "none" if first is None else f"t{first}",
                  "-" if rec is None else ("yes" if rec else "no"))
    con.print(m)
    s = Table(title="teacher-forced top-1 agreement per segment (c0: with the capture; "
                    "others: with c0, mean KL)")
    s.add_column("cfg")
    segs = ("system", "user", "assistant_prose", "tool_call", "tool_result", "template")
    for seg in segs:
        s.add_column(seg.replace("assistant_", "").replace("_", " "))
    for c in summary["configs"]:
        vs = c.get("vs_reference")
        if vs is None:
            cap = c["teacher_forced"]["by_segment"]
            s.add_row(names[c["config"]],
                      *[f"{cap[x]['captured_top1']:.2%}" if x in cap else "-" for x in segs])
            continue
        bs = vs["by_segment"]
        s.add_row(names[c["config"]], *[f"{bs[x]['top1_agreement']:.1%} "
                                        f"({bs[x]['mean_kl_ref_cand']:.0e})"
                                 if x in bs else "-" for x in segs])
    con.print(s)
    con.print(f"result: {path}")


@run_app.command("replay")
def replay(
    workstream: Path = typer.Argument(None, help="workstream JSON (prov-workstream/1); "
                                      "default: the bundled file-reading agent"),
    config: list[str] = typer.Option([], "--config", "-c",
                                     help="configuration (engine spec, plus kv_cache=int8|int4|"
                                          "int2 for transformers); the first is the reference"),
    model: Path = typer.Option(None, help="model directory with tokenizer and chat template; "
                               "default with the bundled workstream: a tiny model trained on it"),
    vary: list[str] = typer.Option([], help="declared variable under test (gate preset or key)"),
    chat_template: Path = typer.Option(None, help="a Jinja chat template file, instead of the "
                                       "model's"),
    out: Path = typer.Option(None, help="result directory"),
    workdir: Path = typer.Option(None, help="where worker outputs go"),
    policy: Path = typer.Option(None, "--policy", help="acceptance policy (TOML [[check]] "
                                "tables); the exit status is its verdict: PASS 0, FAIL 1, "
                                "NOT_COMPARABLE 3, NOT_EVALUATED 5"),
    as_json: bool = typer.Option(False, "--json", help="print the summary as JSON"),
    standalone: bool = typer.Option(False, "--standalone",
                                    help="plain child processes: no run records, no gate"),
) -> None:
    """Replay a captured agentic workstream: where do tool calls break under each configuration?

    Teacher-forced agreement and KL per segment type (system, user, assistant prose, tool-call
    JSON, tool result), and greedy generation at every captured tool-call turn, open and closed
    loop, each call checked (JSON, declared tool, schema, equal to the capture).
    """
    from provenance.cli.output import console, print_json
    from provenance.model.policy import policy_exit, refused_under
    from runners import api

    pol = read_policy(policy)
    if not config and not vary:
        vary = ["kv-cache-dtype"]  # what the default configurations vary, and nothing else
    config = config or DEFAULT_CONFIGS
    bundled = Path(api.EXAMPLES) / "file_agent.json"
    ws = api.load_workstream(workstream or bundled)  # a WorkstreamError is a ProvError
    try:
        cfgs = [api.ReplayConfig.parse(c) for c in config]
    except api.EngineError as exc:  # a plain Exception: workers raise it without prov
        raise ProvError(str(exc)) from exc
    if chat_template is not None and not chat_template.is_file():
        raise ProvError(f"{chat_template}: no such chat template file")
    if model is None:
        if workstream is not None:
            raise ProvError("--model is needed for a workstream other than the bundled example")
        model = api.ensure_replay_model(
            Path(os.environ.get("PROV_REPLAY_MODEL") or DEMO_MODEL), bundled)
    if not (model / "config.json").is_file() or not (model / "tokenizer.json").is_file():
        raise ProvError(f"{model}: not a model directory (config.json and tokenizer.json)")
    out = out or default_out("replay")
    work = workdir or out.parent / f".{out.name}.work"
    try:
        res = api.run_replay(ws, model, cfgs, work, out, launcher=launcher(standalone),
                             check=gate_check(vary, None, standalone), chat_template=chat_template,
                             policy=pol)
    except (api.LaunchError, api.EngineError, api.DisclosureError) as exc:
        raise ProvError(str(exc), 3) from exc
    except ProvError as exc:
        raise refused_under(pol, exc) from exc
    block = recorded_policy(res.result_path) if pol else None
    if as_json:
        print_json({"result": str(res.result_path), **res.summary,
                    **({"policy": block} if block else {})})
    else:
        render_replay(res.summary, res.result_path, console())
        if block:
            render_policy(block, console())
    raise typer.Exit(policy_exit(block))
