"""`prov exec` with the probe: what the gate refuses on, and what must not change."""

# ruff: noqa: F811 - pytest fixtures imported from tests.exec_support
from __future__ import annotations

import json

import pytest

from tests.exec_support import (  # noqa: F401 - fixtures
    PYTHON,
    last_run,
    penv,
    prov,
    prov_cache,
)

# One numeric workload; PROBE_CASE picks the in-process call. The workload reads it, so it is
# identity too (`env.PROBE_CASE`, exec/probe/envread.py): the tests declare it where they
# look at what the call itself changed
WORKLOAD = """
import os, torch
case = os.environ.get("PROBE_CASE", "")
if case == "threads":
    torch.set_num_threads(1)
elif case == "denormal":
    torch.set_flush_denormal(True)
elif case == "tf32":
    torch.backends.cuda.matmul.allow_tf32 = True
elif case == "matmul":
    torch.set_float32_matmul_precision("medium")
g = torch.Generator().manual_seed(0)
a = torch.randn(64, 64, generator=g, dtype=torch.float64)
q = torch.randn(1, 2, 8, 32, generator=g)  # sdpa: the probe wraps it (torch_sdpa)
att = torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
print(repr(float((a @ a).sum())), repr(float(att.sum())), torch.get_num_threads() > 0)
"""
CASES = {
    "threads": "runtime.torch.flags.num_threads",
    "denormal": "runtime.torch.flags.flush_denormal",
    "tf32": "runtime.torch.flags.cuda_matmul_allow_tf32",
    "matmul": "runtime.torch.flags.float32_matmul_precision",
}


def exec_run(penv, script, case="", *args, **env):
    e = dict(penv, PROBE_CASE=case, **env)
    p = prov("exec", "-q", "--", PYTHON, str(script), *args, env=e)
    assert p.returncode == 0, p.stderr
    return last_run(penv), p


def compare(penv, a, b, *vary):
    flags = [x for v in vary for x in ("--vary", v)]
    p = prov("compare", a["run_id"], b["run_id"], *flags, "--json", env=penv)
    return p.returncode, json.loads(p.stdout)


@pytest.fixture
def workload(tmp_path):
    path = tmp_path / "work.py"
    path.write_text(WORKLOAD)
    return path


def test_identical_runs_compare_clean_and_record_no_change(penv, workload):
    a, _ = exec_run(penv, workload)
    b, _ = exec_run(penv, workload)
    rc, doc = compare(penv, a, b)
    assert rc == 0 and doc["identical"] is True, doc["refused"]
    torch = a["facts"]["runtime"]["torch"]
    assert "changed" not in torch and torch["flags"]["num_threads"] >= 1
    assert a["facts"]["probe"]["state"] == "on" and a["facts"]["probe"]["complete"] is True


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_in_process_torch_call_is_refused_naming_the_key(penv, workload, case):
    a, _ = exec_run(penv, workload)
    b, _ = exec_run(penv, workload, case)
    rc, doc = compare(penv, a, b)
    assert rc == 3 and "env.PROBE_CASE" in doc["refused"]
    rc, doc = compare(penv, a, b, "env.PROBE_CASE")
    assert rc == 3
    assert CASES[case] in doc["refused"], doc["refused"]
    # torch >= 2.9 mirrors the legacy TF32 flags in its fp32_precision settings
    assert all(k.startswith("runtime.torch.flags.") for k in doc["refused"]), doc["refused"]
    changed = b["facts"]["runtime"]["torch"]["changed"]
    assert CASES[case].rsplit(".", 1)[1] in changed  # both values kept (context)


def test_the_threads_preset_covers_set_num_threads(penv, workload):
    a, _ = exec_run(penv, workload)
    b, _ = exec_run(penv, workload, "threads")
    human = prov("compare", a["run_id"], b["run_id"], env=penv).stderr.decode()
    assert "covered by --vary threads: runtime.torch.flags.num_threads" in human
    rc, doc = compare(penv, a, b, "threads", "env.PROBE_CASE")
    assert rc == 0, doc["refused"]
    assert list(doc["varied"]["threads"]["keys"]) == ["runtime.torch.flags.num_threads"]


def test_a_different_command_line_is_refused_unless_declared(penv, workload):
    a, _ = exec_run(penv, workload)
    b, _ = exec_run(penv, workload, "", "--extra-arg")
    rc, doc = compare(penv, a, b)
    assert rc == 3 and list(doc["refused"]) == ["code.args.extra_arg"]
    rc, doc = compare(penv, a, b, "command")
    assert rc == 0 and list(doc["varied"]["command"]["keys"]) == ["code.args.extra_arg"]


def test_an_edited_script_is_refused_by_its_digest(penv, workload):
    a, _ = exec_run(penv, workload)
    workload.write_text(WORKLOAD + "# edited\n")
    b, _ = exec_run(penv, workload)
    rc, doc = compare(penv, a, b)
    assert rc == 3 and list(doc["refused"]) == ["code.script.sha256"]


def test_output_and_exit_status_are_byte_identical_with_and_without_the_probe(penv, workload):
    import subprocess

    code = str(workload.read_text() + "raise SystemExit(5)\n")
    workload.write_text(code)
    plain = subprocess.run([PYTHON, str(workload)], capture_output=True, env=penv)
    runs, recs = [], []
    for switch in ("1", "0"):
        e = dict(penv, PROV_INPROCESS=switch, PROBE_CASE="threads")
        p = prov("exec", "-q", "--", PYTHON, str(workload), env=e)
        runs.append((p.returncode, p.stdout, p.stderr))
        recs.append(last_run(penv))
        assert recs[-1]["facts"]["probe"]["state"] == ("on" if switch == "1" else "off")
    plain = subprocess.run([PYTHON, str(workload)], capture_output=True,
                           env=dict(penv, PROBE_CASE="threads"))
    assert runs[0] == runs[1] == (5, plain.stdout, plain.stderr)
    assert len(plain.stdout.split()) == 3
    assert len(recs[0]["facts"]["runtime"]["torch"]["sdpa_kernels"]) == 1  # sdpa was wrapped


def test_a_non_python_command_records_its_command_and_no_probe(penv):
    p = prov("exec", "-q", "--", "sh", "-c", "echo hi", env=penv)
    assert (p.returncode, p.stdout) == (0, b"hi\n")
    rec = last_run(penv)
    assert rec["facts"]["probe"]["state"] == "no python process"
    assert rec["facts"]["code"]["command"] == ["sh", "-c", "echo hi"]


def test_declared_outputs_in_the_command_line_are_written_as_placeholders(penv, tmp_path):
    recs = []
    for name in ("a", "b"):
        out = tmp_path / f"out-{name}"
        code = "import sys, pathlib; pathlib.Path(sys.argv[1]).write_text('x')"
        p = prov("exec", "-q", "--output", str(out), "--", PYTHON, "-c", code, str(out),
                 f"--log={out}/log.txt", env=penv)
        assert p.returncode == 0, p.stderr
        recs.append(last_run(penv))
    assert recs[0]["facts"]["code"]["command"] == [
        "python", "-c", code, "<output>", "--log=<output>/log.txt"]
    rc, doc = compare(penv, *recs)
    assert rc == 0, doc["refused"]


def test_what_the_probe_saw_wins_over_what_the_script_claims(penv, workload):
    """A script's facts.json cannot report another torch state than the one that ran."""
    claim = ("import json, os, pathlib; pathlib.Path(os.environ['PROV_RUN_DIR'], 'facts.json')"
             ".write_text(json.dumps({'runtime': {'torch': {'flags': {'num_threads': 999}},"
             " 'mine': {'note': 'kept'}}}))\n")
    workload.write_text(WORKLOAD + claim)
    a, _ = exec_run(penv, workload)
    runtime = a["facts"]["runtime"]
    assert runtime["torch"]["flags"]["num_threads"] not in (999, None)
    assert runtime["mine"] == {"note": "kept"}  # a fact the probe has no word on joins
    assert any("runtime.torch.flags.num_threads differs from what the probe saw" in w
               for w in a["warnings"]), a["warnings"]
