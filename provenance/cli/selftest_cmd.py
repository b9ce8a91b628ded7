"""`prov selftest identity`: prov's identity checked against what really moves the numbers.

A fixed workload runs under a matrix of perturbations, each alone against a baseline and
each a recorded `prov exec` run; a row is *sound* when outputs and identity agree, a
*missed cause* when the outputs changed but the identity did not, *noise* when a change
that must not matter moved the identity. Exit 1 when any row is a missed cause or noise
(or failed).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import typer

from provenance.cli import app
from provenance.model.errors import ProvError

selftest_app = typer.Typer(help="prov checks itself.", no_args_is_help=True)
app.add_typer(selftest_app, name="selftest")

CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "prov" / "selftest"


@selftest_app.command("identity")
def identity(
    gpu: bool = typer.Option(False, "--gpu", help="the GPU matrix (device cuda)"),
    workdir: Path = typer.Option(None, help="runs, store and outputs (default: a new temp dir)"),
    model: Path = typer.Option(None, help="demo model directory (default: built and cached)"),
    alt_python: str = typer.Option(
        None, help="interpreter of a second environment with another numpy (default: built "
        "under ~/.cache/prov/selftest, needs PyPI; 'none' skips the row)"),
    only: str = typer.Option(None, help="comma-separated row names to run"),
    tokens: int = typer.Option(192, help="tokens of the demo text to score"),
    out: Path = typer.Option(None, "--out", help="write the result JSON here"),
    markdown: Path = typer.Option(None, help="write the Markdown table here"),
    as_json: bool = typer.Option(False, "--json", help="print the result JSON"),
    programs: bool = typer.Option(
        False, "--programs", help="the user-program rows instead: programs written as users "
        "write them (transformers, safetensors, numpy, vLLM), run under prov exec"),
    python: str = typer.Option(
        None, "--python", help="with --programs: the interpreter of an environment with vllm "
        "for the vLLM rows (without it they are not run)"),
) -> None:
    """Run the identity perturbation matrix (CPU by default; --gpu on a CUDA machine)."""
    from provenance.cli.output import console
    from provenance.selftest import Runner, matrix, run_matrix

    con = console(stderr=True)
    if programs:
        if gpu:
            raise ProvError("--programs runs on the CPU; leave out --gpu")
        result = _programs(con, workdir, model, only, python)
        _emit(result, out, markdown, as_json)
        return
    device = "cpu"
    if gpu:
        count = _cuda_devices()
        if count < 1:
            raise ProvError("--gpu: torch sees no CUDA device")
        rows, device = matrix.gpu_matrix(count), "cuda"
    else:
        rows = matrix.cpu_matrix()
    if only:
        rows = _only(rows, only)
    if model is None:
        from runners import api

        model = api.ensure_demo_model(CACHE / "demo-model", steps=120)
    if alt_python is None and any(r.special == "alt-python" for r in rows):
        alt_python = _alt_python(con)
    elif alt_python == "none":
        alt_python = None
    workdir = workdir or Path(tempfile.mkdtemp(prefix="prov-selftest-"))
    runner = Runner(workdir, model, device=device, alt_python=alt_python, tokens=tokens,
                    log=lambda name: con.print(f"[dim]run[/dim] {name}"))
    result = run_matrix(runner, rows)
    _emit(result, out, markdown, as_json)


BAD = ("missed cause", "noise", "failed", "declaration refused")


def _emit(result: dict, out: Path | None, markdown: Path | None, as_json: bool) -> None:
    """Write and print the result; exit 1 on a missed cause, noise or a failed row."""
    from provenance.cli.output import console, print_json
    from provenance.selftest import report

    if out:
        _write(out, json.dumps(result, indent=1, sort_keys=True) + "\n")
    if markdown:
        _write(markdown, report.markdown(result))
    if as_json:
        print_json(result)
    else:
        report.render(result, console())
    bad = sum(result["counts"].get(k, 0) for k in BAD)
    raise typer.Exit(1 if bad else 0)


def _programs(con, workdir: Path | None, model: Path | None, only: str | None,
              python: str | None) -> dict:
    """The user-program rows (provenance/selftest/user_rows.py)."""
    from provenance.selftest import user_rows

    rows = user_rows.rows()
    if only:
        rows = _only(rows, only)
    if model is None:
        from runners import api

        model = api.ensure_demo_model(CACHE / "demo-model", steps=120)
    workdir = workdir or Path(tempfile.mkdtemp(prefix="prov-selftest-programs-"))
    runner = user_rows.ProgramRunner(workdir, model, vllm_python=python,
                                     log=lambda name: con.print(f"[dim]run[/dim] {name}"))
    return user_rows.run_programs(runner, rows)


def _only(rows: list, only: str) -> list:
    wanted = {n.strip() for n in only.split(",") if n.strip()}
    unknown = wanted - {r.name for r in rows}
    if unknown:
        raise ProvError(f"--only: unknown row(s): {', '.join(sorted(unknown))}")
    return [r for r in rows if r.name in wanted]


def _alt_python(con) -> str | None:
    from provenance.selftest import ensure_alt_env

    try:
        return str(ensure_alt_env(CACHE / "alt-numpy"))
    except Exception as exc:  # reported as a row that did not run, with the reason
        con.print(f"[yellow]no second environment:[/yellow] {exc}")
        return None


def _cuda_devices() -> int:
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.device_count())"],
                          capture_output=True, text=True)
    try:
        return int(proc.stdout.strip())
    except ValueError:
        return 0


def _write(path: Path, text: str) -> None:
    from provenance.model.atomic import write_atomic

    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, text)
