"""`prov sweep` with the embedded executor: ^C mid-sweep, then resume without re-running
finished cells; the store passes `prov store fsck`; the matrix table is printed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from runners.sweep.cell import CELL_DIR_PREFIX

PROV = str(Path(sys.executable).with_name("prov"))


def _spec(tmp: Path, model: Path, repeats: int = 1) -> Path:
    spec = tmp / "spec.toml"
    spec.write_text(f"""
[sweep]
name = "local-test"
engine = "transformers"
model = "{model}"
text = "{model / 'eval.txt'}"
max_tokens = 64
block = 16
repeats = {repeats}
[axes]
attn = ["eager", "sdpa"]
dtype = ["float32", "bfloat16"]
[reference]
attn = "eager"
dtype = "float32"
""")
    return spec


def _reap(proc: subprocess.Popen) -> None:
    """A sweep a failed assertion left running is killed, not leaked into the next test."""
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def _journal(tmp: Path) -> list[dict]:
    p = tmp / "store" / "sweeps" / "cells.jsonl"
    return [json.loads(x) for x in p.read_text().splitlines()] if p.exists() else []


def test_interrupted_sweep_resumes_without_rerunning_finished_cells(demo_model, tmp_path):
    from provenance.store import open_store

    spec = _spec(tmp_path, demo_model)
    env = {**os.environ, "PROV_STORE": str(tmp_path / "store"), "PROV_NO_PYPROJECT": "1",
           "COLUMNS": "250"}
    proc = subprocess.Popen([PROV, "sweep", str(spec)], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 300
        while len(_journal(tmp_path)) < 2 and time.time() < deadline and proc.poll() is None:
            time.sleep(0.2)
        assert len(_journal(tmp_path)) == 2, "two cells never finished"
        proc.send_signal(signal.SIGINT)  # ^C while the third cell runs
        _, err = proc.communicate(timeout=120)
    finally:
        _reap(proc)
    assert proc.returncode == 130, err[-2000:]
    finished = {e["key"]: e for e in _journal(tmp_path)}
    assert 2 <= len(finished) < 4
    store = open_store(tmp_path / "store")
    journaled_runs = {r for e in finished.values() for r in store.get_json(e["object"])["runs"]}
    before = {r.run_id for r in store.list_runs()}
    # a run the ^C caught after it finished but before its cell was journaled stays in the
    # store as a run of its own; the cell itself runs again
    complete_before = {r.run_id for r in store.list_runs() if r.state == "complete"}
    assert journaled_runs <= complete_before
    fsck = subprocess.run([PROV, "store", "fsck", "--json"], env=env, capture_output=True,
                          text=True)
    assert fsck.returncode == 0 and json.loads(fsck.stdout)["ok"], fsck.stdout

    again = subprocess.run([PROV, "sweep", str(spec), "--json"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=400)
    assert again.returncode == 0, again.stderr[-2000:]
    rec = json.loads(again.stdout)
    reused = [c for c in rec["cells"] if c["reused"]]
    assert {c["key"] for c in reused} == set(finished)
    assert {r for c in reused for r in c["runs"]} == journaled_runs  # the same runs
    fresh = [r for c in rec["cells"] if not c["reused"] for r in c["runs"]]
    assert len(fresh) == 4 - len(finished) and not set(fresh) & before  # only these ran
    complete = {r.run_id for r in store.list_runs() if r.state == "complete"}
    assert complete == complete_before | set(fresh)
    assert all(c["state"] == "complete" for c in rec["cells"])
    assert rec["cells"][0]["reference"] and rec["cells"][0]["gate"] == {"gate": "reference"}
    by = {c["label"]: c for c in rec["cells"]}
    assert by["attn=sdpa,dtype=float32"]["summary"]["top1_agreement"] == 1.0
    assert by["attn=sdpa,dtype=bfloat16"]["gate"]["gate"] == "passed"
    fsck = subprocess.run([PROV, "store", "fsck", "--json"], env=env, capture_output=True,
                          text=True)
    assert fsck.returncode == 0 and json.loads(fsck.stdout)["ok"]

    # a third time: nothing runs, and the matrix table shows every cell
    table = subprocess.run([PROV, "sweep", str(spec)], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=120)
    assert table.returncode == 0, table.stderr
    assert "top-1 agree" in table.stdout and "reference" in table.stdout
    assert table.stdout.count("(resumed)") == 4
    assert {r.run_id for r in store.list_runs() if r.state == "complete"} == complete


def test_skipped_and_out_of_budget_cells_say_why_they_did_not_run(demo_model, tmp_path):
    spec = _spec(tmp_path, demo_model)
    spec.write_text(spec.read_text() + '[[skip]]\nmatch = { attn = "sdpa", dtype = "bfloat16" }'
                    '\nreason = "not offered here"\n')
    env = {**os.environ, "PROV_STORE": str(tmp_path / "store"), "PROV_NO_PYPROJECT": "1"}
    p = subprocess.run([PROV, "sweep", str(spec), "--json", "--budget", "1"], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=400)
    assert p.returncode == 1, p.stderr[-2000:]  # cells left unstarted: not a complete sweep
    cells = {c["label"]: c for c in json.loads(p.stdout)["cells"]}
    skipped = cells["attn=sdpa,dtype=bfloat16"]
    assert skipped["state"] == "not run" and skipped["reason"] == "not offered here"
    assert skipped["declared"] and skipped["runs"] == []
    # the budget is spent by the time the last planned cell would start (the first cell,
    # if it started, took longer than 1 s): not run, with the budget as the reason
    last = cells["attn=sdpa,dtype=float32"]
    assert last["state"] == "not run" and not last["declared"] and last["runs"] == []
    assert "time budget" in last["reason"]
    ray = subprocess.run([PROV, "sweep", str(spec), "--ray", "auto", "--budget", "5"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert ray.returncode == 2 and "local executor only" in ray.stderr


def test_cells_run_at_once_give_the_same_record_as_one_after_another(demo_model, tmp_path):
    """--jobs 2: each cell in a worker process with a private store merged into the driver's
    (the store stays whole), and the same repeats, gate and figures as --jobs 1; a secret in
    the environment reaches no stored object."""
    from provenance.store import open_store

    spec = _spec(tmp_path, demo_model)
    secret = "hf_" + "Qx7" * 12
    records = {}
    for jobs in (1, 2):
        env = {**os.environ, "PROV_STORE": str(tmp_path / f"store{jobs}"),
               "PROV_NO_PYPROJECT": "1", "HF_TOKEN": secret}
        p = subprocess.run([PROV, "sweep", str(spec), "--json", "--jobs", str(jobs)],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, p.stderr[-3000:]
        records[jobs] = {c["label"]: c for c in json.loads(p.stdout)["cells"]}
        fsck = subprocess.run([PROV, "store", "fsck"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)
        assert fsck.returncode == 0, fsck.stdout + fsck.stderr
    one, two = records[1], records[2]
    assert set(one) == set(two) and len(two) == 4
    store = open_store(tmp_path / "store2")
    for label, cell in two.items():
        assert cell["state"] == "complete", cell
        assert cell["shipped"]["objects"] > 0  # came back from a worker's private store
        assert store.get_run(cell["runs"][0]).record_digest == cell["records"][0]
        assert cell["gate"]["gate"] == one[label]["gate"]["gate"]
        if "summary" in one[label]:
            for k in ("top1_agreement", "kl_ref_cand_mean", "kl_ref_cand_max"):
                assert cell["summary"][k] == one[label]["summary"][k], (label, k)
    assert all(c["node"]["jobs"] == 2 for c in two.values())
    assert all(c["gate"]["gate"] in ("passed", "reference") for c in two.values()), two
    for jobs in (1, 2):
        for f in (tmp_path / f"store{jobs}").rglob("*"):
            assert not f.is_file() or secret.encode() not in f.read_bytes(), f
    assert all(c["shipped"] is None for c in one.values())  # straight into the store
    ray = subprocess.run([PROV, "sweep", str(spec), "--ray", "auto", "--jobs", "2"],
                         cwd=tmp_path, env={**os.environ, "PROV_STORE": str(tmp_path / "s")},
                         capture_output=True, text=True, timeout=60)
    assert ray.returncode == 2 and "local executor only" in ray.stderr


def _cells_running(cells: Path) -> int:
    """How many workers have a run started in their cell's private store (a cell's runs dir
    holds a folder per live run; the workers' temp dirs are under `cells`)."""
    return sum(1 for d in cells.glob(f"{CELL_DIR_PREFIX}*/store/runs") if any(d.iterdir()))


def test_interrupting_cells_run_at_once_stops_them_all(demo_model, tmp_path):
    """^C with --jobs 2 while two cells run: exit 130, no cell journaled half-done, the store
    passes fsck (each cell's runs lived in its worker's private store). The ^C is sent once
    both workers have a run started (three repeats a cell: the sweep is far from done), not
    after a while (it raced the sweep's end on a loaded machine)."""
    spec = _spec(tmp_path, demo_model, repeats=3)
    cells = tmp_path / "cells"  # the workers' temp dirs: their private stores
    cells.mkdir()
    env = {**os.environ, "PROV_STORE": str(tmp_path / "store"), "PROV_NO_PYPROJECT": "1",
           "TMPDIR": str(cells)}
    proc = subprocess.Popen([PROV, "sweep", str(spec), "--jobs", "2"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300  # fails only a hang
        while _cells_running(cells) < 2:
            assert proc.poll() is None, proc.communicate()[1][-2000:]
            assert time.monotonic() < deadline, "two cells never ran at once"
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        _reap(proc)
    assert proc.returncode == 130, err[-2000:]
    fsck = subprocess.run([PROV, "store", "fsck", "--json"], env=env, capture_output=True,
                          text=True, timeout=120)
    assert fsck.returncode == 0 and json.loads(fsck.stdout)["ok"], fsck.stdout
