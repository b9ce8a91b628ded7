"""The CPU perturbation matrix, run for real: every row a `prov exec` run of the workload.

Oracles are torch/numpy/the kernel themselves: whether a perturbation moves the output
bytes is measured, never assumed; the test asserts the identity agrees (0 missed causes,
0 noise rows) and that the rows whose effect is certain on any x86 CPU did move it.
torch is imported only in child processes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

CACHE = Path(os.environ.get("PROV_TEST_CACHE", Path.home() / ".cache" / "prov-tests"))
PROV = [sys.executable, "-c", "from provenance.cli import main; main()"]


@pytest.fixture(scope="module")
def matrix(tmp_path_factory) -> dict:
    model = CACHE / "demo-model"
    # built in a child: the pytest process must not import torch
    subprocess.run([sys.executable, "-c", "import sys; from pathlib import Path; "
                    "from runners.demo.build import ensure; ensure(Path(sys.argv[1]), steps=120)",
                    str(model)], check=True)
    from provenance.selftest.altenv import ensure_alt_env

    alt = ensure_alt_env(CACHE / "selftest-altnumpy")
    work = tmp_path_factory.mktemp("selftest")
    out = work / "result.json"
    proc = subprocess.run(
        [*PROV, "selftest", "identity", "--workdir", str(work / "runs"), "--model", str(model),
         "--alt-python", str(alt), "--out", str(out), "--markdown", str(work / "table.md")],
        capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"})
    result = json.loads(out.read_text())
    result["_exit"] = proc.returncode
    result["_stdout"] = proc.stdout + proc.stderr
    result["_markdown"] = (work / "table.md").read_text()
    return result


def rows(result: dict) -> dict[str, dict]:
    return {r["name"]: r for r in result["rows"]}


def test_every_row_ran_and_no_missed_cause_or_noise(matrix):
    bad = [(r["name"], r["verdict"], r["reason"], r["keys"]) for r in matrix["rows"]
           if r["status"] != "ok" or r["verdict"] != "sound"]
    assert not bad, matrix["_stdout"][-4000:]
    assert matrix["_exit"] == 0
    assert matrix["counts"] == {"sound": len(matrix["rows"])}
    assert len(matrix["rows"]) == 17


def test_known_effects_were_measured_and_named(matrix):
    # under the probe's keys: it is the one reader of runtime facts, whoever wrote the program
    r = rows(matrix)
    assert {"logits", "hidden"} <= set(r["attention"]["outputs_changed"])
    assert "runtime.transformers.models.0.attn_implementation" in r["attention"]["keys"]
    assert {"logits", "matmul"} <= set(r["dtype"]["outputs_changed"])
    assert "runtime.transformers.models.0.dtype" in r["dtype"]["keys"]
    # FTZ/DAZ flush the denormal products whether set by torch or by a preloaded library
    for name in ("flush-denormal", "ld-preload"):
        assert r[name]["outputs_changed"] == ["denormal"], name
        assert "runtime.torch.flags.flush_denormal" in r[name]["keys"], name
    assert "env.LD_PRELOAD" in r["ld-preload"]["keys"]
    assert "runtime.torch.flags.num_threads" in r["torch-threads"]["keys"]
    assert {"env.OMP_NUM_THREADS", "torch.flags.num_threads"} <= set(r["omp-threads"]["keys"])
    assert {"env.ATEN_CPU_CAPABILITY", "runtime.torch.flags.cpu_capability"} <= set(
        r["aten-cpu-capability"]["keys"])
    assert "python.packages.numpy.version" in r["numpy-version"]["keys"]
    # a variable given only to the command (run_supervised env_extra) is identity too
    assert r["api-env-openblas"]["outputs_changed"] == ["numpy"]
    assert r["api-env-openblas"]["keys"] == ["env.OPENBLAS_CORETYPE"]


def test_context_rows_leave_the_identity_alone(matrix):
    for row in matrix["rows"]:
        if row["expect"] == "context":
            assert row["keys"] == [] and not row["identity_changed"], row
            assert row["outputs_changed"] == [], row


def test_every_run_is_a_recorded_prov_exec_run(matrix):
    from provenance.store import open_store

    store = open_store(matrix["store"])
    for row in matrix["rows"]:
        if row["name"] == "user":
            continue  # recorded in the nobody-owned store next to it
        rec = store.get_run(row["run_id"]).record
        assert rec.state == "complete" and rec.exit_status == 0
        assert rec.name == f"selftest-{row['name']}"
        assert rec.outputs, rec.outputs


def test_markdown_table_has_one_line_per_row(matrix):
    lines = [x for x in matrix["_markdown"].splitlines() if x.startswith("| ")]
    assert len(lines) == 1 + len(matrix["rows"])
    assert matrix["machine"]["cores"] == os.cpu_count()
