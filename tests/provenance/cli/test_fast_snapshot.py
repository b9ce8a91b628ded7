"""`prov snapshot` parsed without typer (`provenance.cli.fast`) reads every argument list
exactly as the typer command does, or hands it to typer; and it really skips typer."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import typer

from provenance.cli import app, fast
from tests.helpers import PROV, run_prov


def snapshot_command():
    group = typer.main.get_command(app)
    return group.commands["snapshot"]


def test_the_fast_parser_knows_exactly_the_typer_options():
    typer_opts = {o for p in snapshot_command().params for o in (*p.opts, *p.secondary_opts)}
    typer_opts.discard("--help")
    assert set(fast.OPTIONS) == typer_opts
    names = {p.name for p in snapshot_command().params}
    assert {param for param, _ in fast.OPTIONS.values()} == names == set(fast.DEFAULTS)


ARGVS = [
    [], ["--json"], ["--python", "/usr/bin/python3"], ["--python=/x/y"], ["-o", "m.toml"],
    ["--out", "m.json", "--format", "json"], ["-f", "json", "-o", "a"], ["--verify-files"],
    ["--image", "oci:/tmp/x", "--json"], ["--python", "a", "--python", "b"],
    ["--format=toml", "--out=m.toml", "--json", "--verify-files"],
]


@pytest.mark.parametrize("args", ARGVS, ids=lambda a: " ".join(a) or "none")
def test_parsed_as_click_parses(args):
    from pathlib import Path

    params = dict(snapshot_command().make_context("snapshot", list(args)).params)
    if params["out"] is not None:  # typer hands the function a Path
        params["out"] = Path(params["out"])
    assert fast.parse(list(args)) == params


@pytest.mark.parametrize("args", [["--help"], ["--bogus"], ["-ofile"], ["--json=1"],
                                  ["--out"], ["--python", "--json"], ["extra"]])
def test_anything_else_goes_to_typer(args):
    assert fast.parse(args) is None


def test_the_console_script_skips_typer_and_prints_the_same(tmp_path):
    env = {"PROV_STORE": str(tmp_path / "store")}
    proc = subprocess.run([sys.executable, "-X", "importtime", PROV, "snapshot", "--json"],
                          capture_output=True, text=True, env={**os.environ, **env},
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert " typer" not in proc.stderr and "| typer" not in proc.stderr
    fast_doc = json.loads(proc.stdout)
    assert fast_doc["python"]["executable"]
    slow = run_prov("snapshot", "--json", "--bogus", env=env)  # typer's usage error path
    assert slow.returncode == 2 and "--bogus" in slow.stderr
    assert run_prov("snapshot", "--help").returncode == 0


def test_errors_keep_the_cli_rules(tmp_path):
    proc = run_prov("snapshot", "--format", "yaml", "-o", str(tmp_path / "m.toml"),
                    env={"PROV_STORE": str(tmp_path / "s")})
    assert proc.returncode == 2
    assert proc.stderr.strip() == "prov: error: --format must be toml or json, not 'yaml'"


def test_the_early_started_collector_answers_as_the_typer_path(tmp_path):
    """`--python` through the fast path (collector child started before prov's imports)
    records what the typer path records."""
    env = {**os.environ, "PROV_STORE": str(tmp_path / "store")}
    args = ["snapshot", "--python", sys.executable, "--json"]
    fast_run = subprocess.run([PROV, *args], capture_output=True, text=True, env=env, timeout=300)
    typer_run = subprocess.run([sys.executable, "-c", "from provenance.cli import main; main()",
                                *args], capture_output=True, text=True, env=env, timeout=300)
    assert fast_run.returncode == typer_run.returncode == 0, fast_run.stderr + typer_run.stderr
    fast_py, typer_py = (json.loads(p.stdout)["python"] for p in (fast_run, typer_run))
    assert fast_py["packages"] == typer_py["packages"]
    assert fast_py["executable"] == typer_py["executable"]


def test_a_warm_snapshot_records_what_a_cold_one_records(tmp_path):
    """Through the console script: a cold `--python` snapshot (prov's caches empty) and a
    warm one (the kept answer, dpkg parse, torch probe and digests reused) give the same
    identity digest, and each stored text re-verifies its recorded digest."""
    import shutil
    import time

    from provenance.collectors.answer_cache import RACY_NS
    from provenance.model import Manifest

    base = shutil.which("python3") or sys.executable
    venv = tmp_path / "venv"
    subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    time.sleep(RACY_NS / 1e9 + 0.1)  # past the racy window, so the cold run's answer is kept
    env = {**os.environ, "PROV_STORE": str(tmp_path / "store"),
           "PROV_CACHE_DIR": str(tmp_path / "cache")}
    args = [PROV, "snapshot", "--python", str(venv / "bin" / "python"), "--json"]
    runs = [subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)
            for _ in range(2)]
    assert [r.returncode for r in runs] == [0, 0], runs[0].stderr + runs[1].stderr
    cold, warm = (Manifest.loads(r.stdout) for r in runs)  # loads re-checks each digest
    assert warm.digest() == cold.digest()
    answers = [m.facts["collectors"]["python"]["answer"] for m in (cold, warm)]
    assert answers == ["collected", "cached"]
    assert warm.facts["host"]["timestamp"] != cold.facts["host"]["timestamp"]
