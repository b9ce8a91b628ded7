"""`prov sweep` with an [invariance] table: the probes run in every cell (the demo model on
transformers, CPU), each cell's verdict is right, its run and result come home with the
cell, the matrix and `prov report` show the verdicts, and a resumed cell keeps them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PROV = str(Path(sys.executable).with_name("prov"))
# small and fast (2 shared cores); the needle is the longest prompt, so it is never padded.
# batch_size is left out: on CPU a lone prompt and the same prompt in a batch of 4 already
# differ in this build (another matmul shape), which would hide what this test is about
INVARIANCE = """
[invariance]
fillers = 3
placements = 1
max_new = 2
needle_tokens = 16
filler_max = 16
probes = ["run_to_run", "needle"]
"""


def _spec(tmp: Path, model: Path) -> Path:
    spec = tmp / "spec.toml"
    spec.write_text(f"""
[sweep]
name = "inv-test"
engine = "transformers"
model = "{model}"
text = "{model / 'eval.txt'}"
max_tokens = 48
block = 16
repeats = 1
[axes]
plant = ["none", "batch_fp16_sum"]
[reference]
plant = "none"
""" + INVARIANCE)
    return spec


@pytest.fixture(scope="module")
def swept(demo_model, tmp_path_factory):
    """One sweep, two cells at once (each in a private store shipped home and merged)."""
    tmp = tmp_path_factory.mktemp("sweep-inv")
    env = {**os.environ, "PROV_STORE": str(tmp / "store"), "PROV_NO_PYPROJECT": "1",
           "COLUMNS": "250"}
    p = subprocess.run([PROV, "sweep", str(_spec(tmp, demo_model)), "--json", "--jobs", "2"],
                       cwd=tmp, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    return tmp, env, json.loads(p.stdout)


def test_each_cell_gets_the_right_verdict(swept):
    _, _, rec = swept
    cells = {c["label"]: c for c in rec["cells"]}
    clean, planted = cells["plant=none"]["invariance"], cells["plant=batch_fp16_sum"]["invariance"]
    assert clean["verdict"] == "invariant"
    assert all(p["identical"] for p in clean["probes"].values())
    assert planted["verdict"] == "not invariant"
    needle = planted["probes"]["needle"]
    assert not needle["identical"] and needle["first_difference"]["where"] == "prompt"
    assert needle["max_abs_logprob_diff"] > 0 and needle["top1_agreement"] <= 1.0
    assert planted["probes"]["run_to_run"]["identical"]  # deterministic per batch
    for inv in (clean, planted):
        assert set(inv["probes"]) == {"run_to_run", "needle"}
        assert inv["control"] == {"op": "batch_fp16_sum", "identical": False,
                                  "failed_as_required": True}
    # the repeats are gated and compared as ever; the probes change none of that
    assert cells["plant=batch_fp16_sum"]["gate"]["gate"] == "passed"


def test_the_probe_run_and_its_result_are_in_the_drivers_store(swept):
    from provenance.store import open_store

    tmp, env, rec = swept
    store = open_store(tmp / "store")
    for cell in rec["cells"]:
        inv = cell["invariance"]
        assert inv["run_id"] not in cell["runs"]  # the repeats stay the repeats
        info = store.get_run(inv["run_id"])  # shipped from the cell's private store
        assert info.state == "complete" and info.record_digest == inv["record"]
        result = store.get_json(inv["result"])  # kept when the cell's temp dir went
        assert result["kind"] == "invariance" and result["run"]["run_id"] == inv["run_id"]
        assert result["summary"]["verdict"] == inv["verdict"]
        assert result["summary"]["probes"]["needle"]["identical"] == \
            inv["probes"]["needle"]["identical"]
    fsck = subprocess.run([PROV, "store", "fsck", "--json"], env=env, capture_output=True,
                          text=True, timeout=120)
    assert fsck.returncode == 0 and json.loads(fsck.stdout)["ok"], fsck.stdout[-2000:]


def test_resumed_cells_keep_their_verdicts_in_the_matrix_and_the_report(swept):
    tmp, env, rec = swept
    spec = tmp / "spec.toml"
    p = subprocess.run([PROV, "sweep", str(spec)], cwd=tmp, env=env, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.count("(resumed)") == 2 and "invariance" in p.stdout
    rows = {line.split()[0]: line for line in p.stdout.splitlines()
            if line.split() and line.split()[0] in ("none", "batch_fp16_sum")}
    assert "not invariant (needle)" in rows["batch_fp16_sum"]
    assert "invariant" in rows["none"] and "not invariant" not in rows["none"]
    digest = p.stdout.split("sweep record ")[1].split()[0]
    out = tmp / "sweep.html"
    r = subprocess.run([PROV, "report", digest, "--out", str(out)], cwd=tmp, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    table = out.read_text().split("<table class='sweep'>")[1].split("</table>")[0]
    assert table.count("invariance: not invariant") == 1
    assert table.count("invariance: invariant") == 1


def test_a_cell_run_without_the_probes_is_not_reused_for_a_sweep_with_them(swept):
    """The same two cells without [invariance]: other keys, so they run again (and the
    probed cells stay journaled for the probed spec)."""
    tmp, env, rec = swept
    plain = tmp / "plain.toml"
    plain.write_text((tmp / "spec.toml").read_text().replace(INVARIANCE, ""))
    p = subprocess.run([PROV, "sweep", str(plain), "--json"], cwd=tmp, env=env,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    cells = json.loads(p.stdout)["cells"]
    assert not any(c["reused"] for c in cells)
    assert all(c["invariance"] is None for c in cells)
    assert not {c["key"] for c in cells} & {c["key"] for c in rec["cells"]}
